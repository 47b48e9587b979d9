package dev.phrony.worker.dev;

import com.google.protobuf.ByteString;
import dev.phrony.runtime.v1.Approval;
import dev.phrony.runtime.v1.ApprovalVote;
import dev.phrony.runtime.v1.ListApprovalsRequest;
import dev.phrony.runtime.v1.RunSessionInteractiveApprovalRequired;
import dev.phrony.worker.agent.PolicyRule;
import java.time.Instant;
import java.time.InstantSource;
import java.time.format.DateTimeFormatter;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;

/**
 * The sessions' approvals, as the runtime's approval coordinator keeps them ({@code
 * internal/core/approval_coordinator.go}): one per call a policy holds, {@code pending} until
 * enough distinct actors approve ({@code approvals_required}) or one denies, each vote recorded; a
 * decision on one no longer pending changes nothing and answers its status. In memory: dev keeps no
 * state.
 */
final class ApprovalBook {

  /** What a held call learns. */
  record Verdict(boolean approved, Optional<String> args, String comment) {}

  /** The outcome of one vote, as {@code DecideApprovalResponse} says it. */
  record Decided(String status, int approvalsReceived, String sessionId) {}

  /** A vote that cannot be counted; {@code code} is the gRPC status it ends with. */
  static final class Refused extends Exception {
    private static final long serialVersionUID = 1L;
    final io.grpc.Status.Code code;

    Refused(io.grpc.Status.Code code, String message) {
      super(message, null, false, false);
      this.code = code;
    }
  }

  static final String PENDING = "pending";
  static final String APPROVED = "approved";
  static final String DENIED = "denied";

  /** A session that ended (cancelled, failed) while the approval waited. */
  static final String CANCELLED = "cancelled";

  /**
   * The call an approval is about.
   *
   * @param sessionId its session
   * @param agentNamespace its agent's namespace
   * @param agentName its agent's name
   * @param callId the call
   * @param tool the routing key's tool
   * @param version the routing key's version
   * @param args the proposed arguments, JSON
   */
  record Subject(
      String sessionId,
      String agentNamespace,
      String agentName,
      String callId,
      String tool,
      String version,
      String args) {}

  /** One approval and its votes; guarded by the book. */
  private static final class Entry {
    final String id;
    final Subject call;
    final PolicyRule rule;
    final Instant createdAt;
    final CompletableFuture<Verdict> verdict = new CompletableFuture<>();
    final List<ApprovalVote> votes = new ArrayList<>();
    String status = PENDING;
    int received;
    Instant decidedAt;
    String decidedBy = "";
    String comment = "";

    Entry(String id, Subject call, PolicyRule rule, Instant createdAt) {
      this.id = id;
      this.call = call;
      this.rule = rule;
      this.createdAt = createdAt;
    }
  }

  /** A call held for a decision: what the stream shows, and what it waits for. */
  record Hold(
      String approvalId,
      RunSessionInteractiveApprovalRequired event,
      CompletableFuture<Verdict> verdict) {}

  private final InstantSource clock;
  private final Map<String, Entry> entries = new LinkedHashMap<>();

  ApprovalBook(InstantSource clock) {
    this.clock = clock;
  }

  /** Holds a call of a session for the decision {@code rule} asks for. */
  synchronized Hold open(Subject call, PolicyRule rule) {
    String id = UUID.randomUUID().toString();
    Entry e = new Entry(id, call, rule, clock.instant());
    entries.put(id, e);
    PolicyRule.Approval a = rule.approval();
    var event =
        RunSessionInteractiveApprovalRequired.newBuilder()
            .setApprovalId(id)
            .setCallId(call.callId())
            .setTool(call.tool())
            .setVersion(call.version())
            .setArgs(ByteString.copyFromUtf8(call.args()))
            .setRoute(a.route())
            .setReason(a.reason().isEmpty() ? "tool call requires human approval" : a.reason())
            .setAuthorityRef(a.authorityRef())
            .setPolicyName(rule.name())
            .setApprovalsRequired(a.approvalsRequired())
            .setComprehensionRequired(a.comprehensionRequired());
    if (!a.runtime().isEmpty()) {
      event.setPolicyRuntime(ByteString.copyFromUtf8(a.runtime().toString()));
    }
    return new Hold(id, event.build(), e.verdict);
  }

  /**
   * One actor's vote.
   *
   * @throws Refused when there is no such approval, or the vote cannot be counted
   */
  synchronized Decided decide(
      String approvalId,
      boolean approve,
      Optional<String> args,
      String comment,
      String actor,
      boolean comprehensionAcknowledged)
      throws Refused {
    Entry e = entries.get(approvalId);
    if (e == null) {
      throw new Refused(io.grpc.Status.Code.NOT_FOUND, "approval " + approvalId + " not found");
    }
    if (!e.status.equals(PENDING)) {
      return new Decided(e.status, e.received, e.call.sessionId());
    }
    if (e.rule.approval().comprehensionRequired() && !comprehensionAcknowledged) {
      throw new Refused(
          io.grpc.Status.Code.INVALID_ARGUMENT, "comprehension acknowledgement is required");
    }
    String by = actor.isBlank() ? "operator" : actor.strip();
    if (e.votes.stream().anyMatch(v -> v.getDecidedBy().equals(by))) {
      throw new Refused(
          io.grpc.Status.Code.FAILED_PRECONDITION,
          "actor \"" + by + "\" already decided on this approval");
    }
    e.votes.add(
        ApprovalVote.newBuilder()
            .setDecidedBy(by)
            .setDecision(approve ? APPROVED : DENIED)
            .setComment(comment)
            .setComprehensionAcknowledged(comprehensionAcknowledged)
            .setCreatedAt(rfc3339(clock.instant()))
            .build());
    if (approve) {
      e.received++;
      if (e.received < e.rule.approval().approvalsRequired()) {
        return new Decided(PENDING, e.received, e.call.sessionId());
      }
    }
    e.status = approve ? APPROVED : DENIED;
    e.decidedAt = clock.instant();
    e.decidedBy = by;
    e.comment = comment;
    e.verdict.complete(new Verdict(approve, args, comment));
    return new Decided(e.status, e.received, e.call.sessionId());
  }

  /** The pending approvals of a session, oldest first. */
  synchronized List<String> pending(String sessionId) {
    return entries.values().stream()
        .filter(e -> e.call.sessionId().equals(sessionId) && e.status.equals(PENDING))
        .map(e -> e.id)
        .toList();
  }

  /** The session ended: its pending approvals will never be decided. */
  synchronized void withdraw(String sessionId) {
    for (Entry e : entries.values()) {
      if (e.call.sessionId().equals(sessionId) && e.status.equals(PENDING)) {
        e.status = CANCELLED;
        e.verdict.cancel(false);
      }
    }
  }

  synchronized Optional<Approval> get(String approvalId) {
    return Optional.ofNullable(entries.get(approvalId)).map(e -> row(e, true));
  }

  /** The approvals the filter's non-empty fields match, oldest first (without their votes). */
  synchronized List<Approval> list(ListApprovalsRequest filter) {
    return entries.values().stream()
        .filter(e -> matches(filter.getStatus(), e.status))
        .filter(e -> matches(filter.getRoute(), e.rule.approval().route()))
        .filter(e -> matches(filter.getSessionId(), e.call.sessionId()))
        .filter(e -> matches(filter.getAgentNamespace(), e.call.agentNamespace()))
        .filter(e -> matches(filter.getAgentName(), e.call.agentName()))
        .sorted(Comparator.comparing(e -> e.createdAt))
        .map(e -> row(e, false))
        .toList();
  }

  private static boolean matches(String wanted, String value) {
    return wanted.isBlank() || wanted.strip().equals(value);
  }

  private Approval row(Entry e, boolean withVotes) {
    PolicyRule.Approval a = e.rule.approval();
    Approval.Builder b =
        Approval.newBuilder()
            .setId(e.id)
            .setSessionId(e.call.sessionId())
            .setCallId(e.call.callId())
            .setStatus(e.status)
            .setRoute(a.route())
            .setReason(a.reason().isEmpty() ? "tool call requires human approval" : a.reason())
            .setTool(e.call.tool())
            .setVersion(e.call.version())
            .setArgs(ByteString.copyFromUtf8(e.call.args()))
            .setAuthorityRef(a.authorityRef())
            .setPolicyName(e.rule.name())
            .setApprovalsRequired(a.approvalsRequired())
            .setApprovalsReceived(e.received)
            .setComprehensionRequired(a.comprehensionRequired())
            .setOnReject(a.onReject())
            .setOnModify(a.onModify())
            .setCreatedAt(rfc3339(e.createdAt))
            .setDecidedBy(e.decidedBy)
            .setComment(e.comment);
    if (!a.runtime().isEmpty()) {
      b.setPolicyRuntime(ByteString.copyFromUtf8(a.runtime().toString()));
    }
    if (e.decidedAt != null) {
      b.setDecidedAt(rfc3339(e.decidedAt));
    }
    if (withVotes) {
      b.addAllVotes(e.votes);
    }
    return b.build();
  }

  static String rfc3339(Instant t) {
    return DateTimeFormatter.ISO_INSTANT.format(t.truncatedTo(ChronoUnit.SECONDS));
  }
}
