package dev.phrony.worker.dev;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.phrony.worker.call.ArgsCheck;
import dev.phrony.worker.plugin.HandlerCatalog;
import dev.phrony.worker.testkit.Call;
import dev.phrony.worker.testkit.Outcome;
import dev.phrony.worker.time.Scheduler;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * The embedded runtime's human-in-the-loop gate: a call its {@link ApprovalPolicy} names is held
 * before dispatch, as {@code approval_required}, until a human approves it (as proposed, or with
 * replacement arguments that must fit the handler's input schema), denies it, or its wait expires.
 * Only an approved call goes on to a worker; the others end with a tool error without any worker
 * seeing them.
 *
 * <p>One owner: each approval is added, answered, expired or withdrawn under this object's lock,
 * exactly once; its verdict future completes outside the lock, on the thread that settled it (a
 * control API request, or the expiry timer of the injected {@link Scheduler}).
 */
public final class Approvals implements AutoCloseable {

  /** The tool error code of a denied call, as the model reads it. */
  public static final String DENIED = "approval_denied";

  /** The tool error code of a call whose approval expired, as the model reads it. */
  public static final String EXPIRED = "approval_expired";

  /**
   * A held call waiting for its answer: the fields of the runtime's {@code
   * RunSessionInteractiveApprovalRequired}.
   *
   * @param approvalId what the answer names, e.g. {@code ap-1a2b3c4d}
   * @param call the call as proposed
   * @param reason why it is held: the pattern that matched it and where that was set
   * @param requestedAt when it was held
   * @param expiresAt when it expires, if it does
   */
  public record Pending(
      String approvalId,
      Call call,
      String reason,
      Instant requestedAt,
      Optional<Instant> expiresAt) {

    /** One human answers a dev approval (a runtime policy may ask for more). */
    public int approvalsRequired() {
      return 1;
    }

    /** No answer counts until the one that settles it. */
    public int approvalsReceived() {
      return 0;
    }

    /**
     * The approval as the event stream and {@code GET /v1/approvals} show it: the runtime's field
     * names, {@code expires_at} RFC 3339 or empty.
     */
    ObjectNode toJson() {
      ObjectNode o = Json.object();
      o.put("approval_id", approvalId);
      o.setAll(CallReply.callFields(call, true));
      o.put("reason", reason);
      o.put("approvals_required", approvalsRequired());
      o.put("approvals_received", approvalsReceived());
      o.put("requested_at", requestedAt.toString());
      o.put("expires_at", expiresAt.map(Instant::toString).orElse(""));
      return o;
    }
  }

  /** How a held call's wait ended. */
  public sealed interface Verdict permits Approved, Denied, Expired, Withdrawn {}

  /**
   * Approved: dispatch {@code call}.
   *
   * @param call the call to dispatch, with the replacement arguments when there were some
   * @param argsReplaced whether the human replaced the arguments
   */
  public record Approved(Call call, String comment, boolean argsReplaced) implements Verdict {}

  /** Denied by a human; the handler never runs. */
  public record Denied(String comment) implements Verdict {}

  /** Nobody answered within {@code timeout}; the handler never runs. */
  public record Expired(Duration timeout) implements Verdict {}

  /**
   * The wait ended for another reason: its session was cancelled ({@link Outcome.Kind#CANCELLED})
   * or dev is stopping ({@link Outcome.Kind#SHUTDOWN}).
   */
  public record Withdrawn(Outcome.Kind kind) implements Verdict {}

  /**
   * A call held: its approval (null when it was refused at once, dev stopping), and the verdict to
   * come (always completed normally).
   */
  public record Hold(Pending pending, CompletableFuture<Verdict> verdict) {}

  /** What came of an answer. */
  public sealed interface Answer permits Settled, NotPending, ArgsRefused {}

  /** The answer settled the approval. */
  public record Settled(Pending pending, Verdict verdict) implements Answer {}

  /** No approval with that id is waiting: never was, or already answered, expired, withdrawn. */
  public record NotPending(String approvalId) implements Answer {}

  /**
   * The replacement arguments break the handler's input schema; the approval stays pending.
   *
   * @param violation the JSON pointer and rule, e.g. {@code /amount: expected number, got string}
   */
  public record ArgsRefused(Pending pending, String violation) implements Answer {}

  private static final class Entry {
    final Pending pending;
    final CompletableFuture<Verdict> verdict = new CompletableFuture<>();
    Scheduler.Handle timer = Scheduler.NONE;

    Entry(Pending pending) {
      this.pending = pending;
    }
  }

  private final ApprovalPolicy policy;
  private final Scheduler scheduler;
  private final InstantSource clock;
  private final Function<String, ArgsCheck> checks;

  /** Waiting approvals in the order they were held. Guarded by {@code this}. */
  private final Map<String, Entry> waiting = new LinkedHashMap<>();

  private boolean closed;

  /**
   * @param scheduler the expiry timers, and the clock of {@code expires_at}
   * @param checks the input schema check of a {@code tool@version} ({@link ArgsCheck#NONE} when its
   *     schema is unknown, e.g. a handler served by another worker)
   */
  public Approvals(ApprovalPolicy policy, Scheduler scheduler, Function<String, ArgsCheck> checks) {
    this.policy = Objects.requireNonNull(policy, "policy");
    this.scheduler = Objects.requireNonNull(scheduler, "scheduler");
    this.clock = scheduler.clock();
    this.checks = Objects.requireNonNull(checks, "checks");
  }

  /**
   * The input schema checks of the handlers {@code catalog} serves now ({@link ArgsCheck#NONE} for
   * a key it does not serve, e.g. one of another worker's): the compiled schemas the worker itself
   * checks calls against.
   */
  public static Function<String, ArgsCheck> schemasOf(Supplier<HandlerCatalog> catalog) {
    return key -> {
      int at = key.indexOf('@');
      return at < 0
          ? ArgsCheck.NONE
          : catalog
              .get()
              .find(key.substring(0, at), key.substring(at + 1))
              .map(HandlerCatalog.Entry::argsCheck)
              .orElse(ArgsCheck.NONE);
    };
  }

  public ApprovalPolicy policy() {
    return policy;
  }

  /**
   * Holds {@code call} if the policy names it. {@code announce} hears the approval before anyone
   * can answer it or it can expire, so {@code approval_required} always comes before the call's
   * end; it runs under this object's lock: be quick, and do not call back.
   *
   * @return the hold, or empty when the call needs no approval; once closed (dev is stopping) a
   *     call that needs one is withdrawn at once, unannounced
   */
  public Optional<Hold> hold(Call call, Consumer<Pending> announce) {
    Optional<ApprovalPolicy.Rule> rule = policy.match(call.key());
    if (rule.isEmpty()) {
      return Optional.empty();
    }
    Instant now = clock.instant();
    synchronized (this) {
      if (closed) {
        return Optional.of(
            new Hold(
                null, CompletableFuture.completedFuture(new Withdrawn(Outcome.Kind.SHUTDOWN))));
      }
      String id;
      do {
        id = "ap-" + HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextInt());
      } while (waiting.containsKey(id));
      Pending p =
          new Pending(
              id,
              call,
              "require-approval " + rule.get().pattern() + " (" + rule.get().source() + ")",
              now,
              policy.timeout().map(now::plus));
      Entry e = new Entry(p);
      announce.accept(p);
      waiting.put(id, e);
      String held = id;
      e.timer =
          policy
              .timeout()
              .map(t -> scheduler.schedule(() -> expire(held), t))
              .orElse(Scheduler.NONE);
      return Optional.of(new Hold(p, e.verdict));
    }
  }

  /** The approvals waiting now, oldest first. */
  public synchronized List<Pending> pending() {
    return waiting.values().stream().map(e -> e.pending).toList();
  }

  /** The waiting approval {@code approvalId}, if it is waiting. */
  public synchronized Optional<Pending> pending(String approvalId) {
    return Optional.ofNullable(waiting.get(approvalId)).map(e -> e.pending);
  }

  /**
   * Answers an approval, as {@code RunSessionInteractiveToolApproval} does.
   *
   * @param comment the human's note (may be empty)
   * @param args replacement arguments (compact JSON), or null to dispatch the call as proposed;
   *     checked against the handler's input schema first (only when approving)
   */
  public Answer answer(String approvalId, boolean approved, String comment, String args) {
    Objects.requireNonNull(approvalId, "approvalId");
    String note = comment == null ? "" : comment;
    Optional<Pending> found = pending(approvalId);
    if (found.isEmpty()) {
      return new NotPending(approvalId);
    }
    Call call = found.get().call();
    Verdict verdict;
    if (!approved) {
      verdict = new Denied(note);
    } else if (args == null) {
      verdict = new Approved(call, note, false);
    } else {
      // Checked outside the lock: a schema may be slow, and the approval cannot change meanwhile
      // except by ending, which settle() sees.
      String violation =
          checks
              .apply(call.key())
              .violation(ByteBuffer.wrap(args.getBytes(StandardCharsets.UTF_8)));
      if (violation != null) {
        return new ArgsRefused(found.get(), violation);
      }
      verdict = new Approved(call.withArgs(args), note, true);
    }
    Optional<Entry> settled = settle(approvalId);
    if (settled.isEmpty()) {
      return new NotPending(approvalId); // it expired or was withdrawn in between
    }
    settled.get().verdict.complete(verdict);
    return new Settled(settled.get().pending, verdict);
  }

  /**
   * Withdraws the approvals of a session (the session was cancelled): their calls end without
   * dispatch.
   *
   * @return the call ids whose approvals were withdrawn
   */
  public List<String> withdrawSession(String sessionId) {
    List<Entry> ended = new ArrayList<>();
    synchronized (this) {
      waiting
          .values()
          .removeIf(
              e -> {
                if (e.pending.call().sessionId().equals(sessionId)) {
                  e.timer.cancel();
                  ended.add(e);
                  return true;
                }
                return false;
              });
    }
    ended.forEach(e -> e.verdict.complete(new Withdrawn(Outcome.Kind.CANCELLED)));
    return ended.stream().map(e -> e.pending.call().callId()).toList();
  }

  /** Holds nothing more, and withdraws every waiting approval (dev is stopping). */
  @Override
  public void close() {
    List<Entry> ended;
    synchronized (this) {
      closed = true;
      ended = new ArrayList<>(waiting.values());
      waiting.clear();
      ended.forEach(e -> e.timer.cancel());
    }
    ended.forEach(e -> e.verdict.complete(new Withdrawn(Outcome.Kind.SHUTDOWN)));
  }

  private void expire(String approvalId) {
    // The timeout as set, not as the timer happened to fire: the model reads a stable text.
    settle(approvalId)
        .ifPresent(e -> e.verdict.complete(new Expired(policy.timeout().orElseThrow())));
  }

  /** Takes a waiting approval out, its timer cancelled; empty if it is no longer waiting. */
  private synchronized Optional<Entry> settle(String approvalId) {
    Entry e = waiting.remove(approvalId);
    if (e != null) {
      e.timer.cancel();
    }
    return Optional.ofNullable(e);
  }
}
