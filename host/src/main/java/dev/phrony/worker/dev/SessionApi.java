package dev.phrony.worker.dev;

import com.fasterxml.jackson.databind.JsonNode;
import dev.phrony.runtime.v1.AgentRef;
import dev.phrony.runtime.v1.Approval;
import dev.phrony.runtime.v1.ApprovalDecision;
import dev.phrony.runtime.v1.CancelSessionRequest;
import dev.phrony.runtime.v1.CancelSessionResponse;
import dev.phrony.runtime.v1.DecideApprovalRequest;
import dev.phrony.runtime.v1.DecideApprovalResponse;
import dev.phrony.runtime.v1.GetApprovalRequest;
import dev.phrony.runtime.v1.ListApprovalsRequest;
import dev.phrony.runtime.v1.ListApprovalsResponse;
import dev.phrony.runtime.v1.RunSessionInteractiveClientMsg;
import dev.phrony.runtime.v1.RunSessionInteractiveServerMsg;
import dev.phrony.runtime.v1.RunSessionInteractiveStart;
import dev.phrony.runtime.v1.RunSessionInteractiveToolApproval;
import dev.phrony.runtime.v1.RuntimeGrpc;
import dev.phrony.worker.agent.DevAgent;
import dev.phrony.worker.agent.DevAgents;
import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.InstantSource;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import java.util.stream.Collectors;

/**
 * The runtime's session and approval RPCs, as dev serves them beside {@code Work} on the runtime's
 * address: {@code RunSessionInteractive} (start a session of an agent loaded with {@code --agent},
 * or attach to one by id; {@code user_message}, {@code tool_approval}), {@code CancelSession},
 * {@code GetApproval}, {@code ListApprovals} and {@code DecideApproval}, with the runtime's status
 * codes and messages ({@code internal/core/run_session_interactive.go}, {@code approvals_rpc.go}).
 * Sessions and approvals live in memory for as long as dev runs.
 */
final class SessionApi implements RuntimeGrpc.AsyncService {

  /** The actor of a decision sent on the interactive stream, as the runtime records it. */
  static final String STREAM_ACTOR = "interactive";

  private final DevAgents agents;
  private final InstantSource clock;
  private final ApprovalBook approvals;
  private final Map<String, Session> sessions = new ConcurrentHashMap<>();
  private volatile CallService calls;
  private volatile Consumer<String> console = line -> {};

  SessionApi(DevAgents agents, InstantSource clock) {
    this.agents = agents;
    this.clock = clock;
    this.approvals = new ApprovalBook(clock);
  }

  /** Sessions dispatch through {@code calls} from now on (the runtime is up). */
  void serve(CallService calls) {
    this.calls = calls;
  }

  /** Prints the sessions' lines ({@code session_started}, approvals, denials, ends) there. */
  void showOn(Consumer<String> console) {
    this.console = console;
  }

  /** Cancels every session still running (dev is stopping). */
  void cancelAll() {
    sessions.values().forEach(Session::cancel);
  }

  @Override
  public StreamObserver<RunSessionInteractiveClientMsg> runSessionInteractive(
      StreamObserver<RunSessionInteractiveServerMsg> out) {
    return new Stream(out);
  }

  /** One interactive stream: its first message starts or attaches; the rest are inputs. */
  private final class Stream implements StreamObserver<RunSessionInteractiveClientMsg> {
    private final StreamObserver<RunSessionInteractiveServerMsg> out;
    private Session session;
    private boolean starter;
    private boolean done;

    Stream(StreamObserver<RunSessionInteractiveServerMsg> out) {
      this.out = new Serialized(out);
      if (out instanceof ServerCallStreamObserver<RunSessionInteractiveServerMsg> call) {
        call.setOnCancelHandler(
            () -> {
              Session s = session;
              if (s != null) {
                s.unsubscribe(this.out);
              }
            });
      }
    }

    @Override
    public synchronized void onNext(RunSessionInteractiveClientMsg m) {
      if (done) {
        return;
      }
      if (session == null) {
        if (!m.hasStart()) {
          fail(Status.INVALID_ARGUMENT.withDescription("first message must be start"));
          return;
        }
        open(m.getStart());
        return;
      }
      switch (m.getBodyCase()) {
        case USER_MESSAGE -> {
          String text = m.getUserMessage().getText().strip();
          if (text.isEmpty()) {
            fail(Status.INVALID_ARGUMENT.withDescription("user_message.text must be non-empty"));
          } else if (!session.userMessage(text)) {
            fail(
                Status.INVALID_ARGUMENT.withDescription(
                    "user_message is not allowed for this session"));
          }
        }
        case TOOL_APPROVAL -> {
          Optional<Status> refused = decideFromStream(session, m.getToolApproval());
          refused.ifPresent(this::fail);
        }
        default ->
            fail(
                Status.INVALID_ARGUMENT.withDescription(
                    starter
                        ? "expected user_message after awaiting_input"
                        : "unexpected start after attach"));
      }
    }

    private void open(RunSessionInteractiveStart start) {
      String sessionId = start.getSessionId().strip();
      if (CallModel.names(start.getAgentRef())) {
        openCalls(start, sessionId);
        return;
      }
      if (!sessionId.isEmpty()) {
        Session s = sessions.get(sessionId);
        if (s == null) {
          fail(Status.NOT_FOUND.withDescription("session " + sessionId + " not found"));
          return;
        }
        session = s;
        if (!s.attach(out)) {
          done = true;
          out.onCompleted();
        }
        return;
      }
      if (start.hasBundleRef() && !start.hasAgentRef()) {
        fail(
            Status.UNIMPLEMENTED.withDescription(
                "phrony-worker dev starts sessions by agent_ref (an agent loaded with --agent),"
                    + " not bundle_ref"));
        return;
      }
      AgentRef ref = start.getAgentRef();
      if (ref.getNamespace().isBlank() || ref.getName().isBlank()) {
        fail(Status.INVALID_ARGUMENT.withDescription("start requires agent_ref or session_id"));
        return;
      }
      Optional<DevAgent> agent = agents.find(ref.getNamespace(), ref.getName(), ref.getVersion());
      if (agent.isEmpty()) {
        fail(Status.NOT_FOUND.withDescription(notLoaded(ref)));
        return;
      }
      Optional<String> input = input(start.getInput().toStringUtf8());
      if (input.isEmpty()) {
        fail(Status.INVALID_ARGUMENT.withDescription("input must be a JSON object"));
        return;
      }
      CallService c = calls;
      if (c == null) {
        fail(Status.UNAVAILABLE.withDescription("dev is starting"));
        return;
      }
      Session s =
          Session.ofAgent(
              UUID.randomUUID().toString(),
              agent.get(),
              c,
              approvals,
              clock,
              line -> console.accept(line));
      sessions.put(s.id, s);
      session = s;
      starter = true;
      s.start(out, input.get());
    }

    /**
     * dev's call sessions ({@link CallModel}): the input is one call; with a {@code session_id},
     * the call is the next turn of that session, made when new.
     */
    private void openCalls(RunSessionInteractiveStart start, String sessionId) {
      String input = start.getInput().toStringUtf8();
      try {
        CallModel.request(input);
        CallRequest.checkSessionId(sessionId);
      } catch (IllegalArgumentException e) {
        fail(Status.INVALID_ARGUMENT.withDescription("call: " + e.getMessage()));
        return;
      }
      CallService c = calls;
      if (c == null) {
        fail(Status.UNAVAILABLE.withDescription("dev is starting"));
        return;
      }
      Session running = sessionId.isEmpty() ? null : sessions.get(sessionId);
      if (running != null && !running.ofCalls()) {
        fail(
            Status.FAILED_PRECONDITION.withDescription(
                "session " + sessionId + " is an agent's, not one of dev's call sessions"));
        return;
      }
      if (running != null && !running.isEnded()) {
        session = running;
        if (!running.attach(out) || !running.input(input)) {
          done = true;
          out.onCompleted();
        }
        return;
      }
      boolean named = !sessionId.isEmpty();
      Session s =
          Session.ofCalls(
              named ? sessionId : UUID.randomUUID().toString(),
              named,
              running == null ? 0 : running.turnsStarted(), // its call ids stay new
              c,
              approvals,
              clock);
      // A named session that ended is made anew: call --session ID goes on after a failure.
      if (running != null
          ? !sessions.replace(s.id, running, s)
          : sessions.putIfAbsent(s.id, s) != null) {
        fail(Status.ALREADY_EXISTS.withDescription("session " + s.id + " is starting"));
        return;
      }
      session = s;
      starter = true;
      s.start(out, input);
    }

    @Override
    public synchronized void onError(Throwable t) {
      done = true;
      if (session != null) {
        session.unsubscribe(out);
      }
    }

    @Override
    public synchronized void onCompleted() {
      if (session == null) {
        if (!done) {
          fail(Status.INVALID_ARGUMENT.withDescription("first message must be start"));
        }
        return;
      }
      if (starter && session.completesOnClose()) {
        session.clientClosed(); // it completes after its turn, and ends this stream then
      } else if (!done) {
        done = true;
        session.unsubscribe(out);
        out.onCompleted();
      }
    }

    private void fail(Status status) {
      done = true;
      if (session != null) {
        session.unsubscribe(out);
      }
      out.onError(status.asRuntimeException());
    }
  }

  /** The runtime's DecideFromStream: the session's held approval, decided by the stream. */
  private Optional<Status> decideFromStream(Session s, RunSessionInteractiveToolApproval a) {
    List<String> held = s.heldApprovals();
    String id = a.getApprovalId().strip();
    if (held.isEmpty()) {
      return Optional.of(Status.INVALID_ARGUMENT.withDescription("no pending approval"));
    }
    if (id.isEmpty()) {
      if (held.size() > 1) {
        return Optional.of(
            Status.INVALID_ARGUMENT.withDescription(
                "approval_id is required: " + held.size() + " approvals are pending"));
      }
      id = held.getFirst();
    } else if (!held.contains(id)) {
      return Optional.of(
          Status.INVALID_ARGUMENT.withDescription("approval_id does not match pending approval"));
    }
    if (approvals.get(id).isEmpty() && held(id).isPresent()) {
      Approvals.Answer answer =
          answerHeld(id, a.getApproved(), a.getComment(), a.getArgs().toStringUtf8());
      return refusal(id, answer);
    }
    try {
      approvals.decide(
          id,
          a.getApproved(),
          a.getArgs().isEmpty() ? Optional.empty() : Optional.of(a.getArgs().toStringUtf8()),
          a.getComment(),
          STREAM_ACTOR,
          true);
      return Optional.empty();
    } catch (ApprovalBook.Refused e) {
      return Optional.of(Status.fromCode(e.code).withDescription(e.getMessage()));
    }
  }

  @Override
  public void cancelSession(
      CancelSessionRequest request, StreamObserver<CancelSessionResponse> out) {
    String id = request.getSessionId().strip();
    if (id.isEmpty()) {
      out.onError(
          Status.INVALID_ARGUMENT.withDescription("session_id is required").asRuntimeException());
      return;
    }
    Session s = sessions.get(id);
    if (s == null) {
      out.onError(
          Status.NOT_FOUND.withDescription("session " + id + " not found").asRuntimeException());
      return;
    }
    if (!s.cancel()) {
      out.onError(
          Status.FAILED_PRECONDITION
              .withDescription("session " + id + " is already " + s.status())
              .asRuntimeException());
      return;
    }
    out.onNext(CancelSessionResponse.getDefaultInstance());
    out.onCompleted();
  }

  @Override
  public void getApproval(GetApprovalRequest request, StreamObserver<Approval> out) {
    String id = request.getApprovalId().strip();
    if (id.isEmpty()) {
      out.onError(
          Status.INVALID_ARGUMENT.withDescription("approval_id is required").asRuntimeException());
      return;
    }
    Optional<Approval> a = approvals.get(id).or(() -> held(id));
    if (a.isEmpty()) {
      out.onError(
          Status.NOT_FOUND.withDescription("approval " + id + " not found").asRuntimeException());
      return;
    }
    out.onNext(a.get());
    out.onCompleted();
  }

  @Override
  public void listApprovals(
      ListApprovalsRequest request, StreamObserver<ListApprovalsResponse> out) {
    ListApprovalsResponse.Builder list =
        ListApprovalsResponse.newBuilder().addAllApprovals(approvals.list(request));
    CallService c = calls;
    // The calls --require-approval holds: pending, of no agent.
    if (c != null
        && (request.getStatus().isBlank() || request.getStatus().strip().equals("pending"))
        && request.getRoute().isBlank()
        && request.getAgentNamespace().isBlank()
        && request.getAgentName().isBlank()) {
      c.approvals().pending().stream()
          .filter(
              p ->
                  request.getSessionId().isBlank()
                      || p.call().sessionId().equals(request.getSessionId().strip()))
          .map(SessionApi::row)
          .forEach(list::addApprovals);
    }
    out.onNext(list.build());
    out.onCompleted();
  }

  @Override
  public void decideApproval(
      DecideApprovalRequest request, StreamObserver<DecideApprovalResponse> out) {
    String id = request.getApprovalId().strip();
    if (id.isEmpty()) {
      out.onError(
          Status.INVALID_ARGUMENT.withDescription("approval_id is required").asRuntimeException());
      return;
    }
    if (request.getDecision() != ApprovalDecision.APPROVAL_DECISION_APPROVE
        && request.getDecision() != ApprovalDecision.APPROVAL_DECISION_REJECT) {
      out.onError(
          Status.INVALID_ARGUMENT
              .withDescription("decision must be APPROVE or REJECT")
              .asRuntimeException());
      return;
    }
    if (approvals.get(id).isEmpty() && held(id).isPresent()) {
      decideHeld(request, out);
      return;
    }
    try {
      ApprovalBook.Decided d =
          approvals.decide(
              id,
              request.getDecision() == ApprovalDecision.APPROVAL_DECISION_APPROVE,
              request.getArgs().isEmpty()
                  ? Optional.empty()
                  : Optional.of(request.getArgs().toString(StandardCharsets.UTF_8)),
              request.getComment(),
              actor(request.getActor()),
              request.getComprehensionAcknowledged());
      Session s = sessions.get(d.sessionId());
      out.onNext(
          DecideApprovalResponse.newBuilder()
              .setStatus(d.status())
              .setApprovalsReceived(d.approvalsReceived())
              .setSessionStatus(s == null ? "" : s.status())
              .build());
      out.onCompleted();
    } catch (ApprovalBook.Refused e) {
      out.onError(Status.fromCode(e.code).withDescription(e.getMessage()).asRuntimeException());
    }
  }

  /** A call --require-approval holds, as the runtime shows an approval. */
  private Optional<Approval> held(String approvalId) {
    CallService c = calls;
    return c == null ? Optional.empty() : c.approvals().pending(approvalId).map(SessionApi::row);
  }

  private static Approval row(Approvals.Pending p) {
    return Approval.newBuilder()
        .setId(p.approvalId())
        .setSessionId(p.call().sessionId())
        .setCallId(p.call().callId())
        .setStatus(ApprovalBook.PENDING)
        .setReason(p.reason())
        .setTool(p.call().tool())
        .setVersion(p.call().version())
        .setArgs(com.google.protobuf.ByteString.copyFrom(p.call().args()))
        .setApprovalsRequired(p.approvalsRequired())
        .setCreatedAt(ApprovalBook.rfc3339(p.requestedAt()))
        .setExpiresAt(p.expiresAt().map(ApprovalBook::rfc3339).orElse(""))
        .build();
  }

  /** Answers a call --require-approval holds, as {@code approve} and {@code deny} do. */
  private void decideHeld(
      DecideApprovalRequest request, StreamObserver<DecideApprovalResponse> out) {
    boolean approve = request.getDecision() == ApprovalDecision.APPROVAL_DECISION_APPROVE;
    String id = request.getApprovalId().strip();
    Approvals.Answer answer =
        answerHeld(id, approve, request.getComment(), request.getArgs().toStringUtf8());
    Optional<Status> refused = refusal(id, answer);
    if (refused.isPresent()) {
      out.onError(refused.get().asRuntimeException());
      return;
    }
    boolean approved =
        answer instanceof Approvals.Settled settled
            && settled.verdict() instanceof Approvals.Approved;
    out.onNext(
        DecideApprovalResponse.newBuilder()
            .setStatus(approved ? ApprovalBook.APPROVED : ApprovalBook.DENIED)
            .setApprovalsReceived(approved ? 1 : 0)
            .build());
    out.onCompleted();
  }

  private Approvals.Answer answerHeld(String id, boolean approve, String comment, String args) {
    return calls.approvals().answer(id, approve, comment, args.isEmpty() ? null : args);
  }

  /** Why an answer to a held call was refused, as the status to give; empty when it settled it. */
  private static Optional<Status> refusal(String id, Approvals.Answer answer) {
    return switch (answer) {
      case Approvals.Settled settled -> Optional.empty();
      case Approvals.NotPending n ->
          Optional.of(Status.NOT_FOUND.withDescription("approval " + id + " not found"));
      case Approvals.ArgsRefused r ->
          Optional.of(
              Status.INVALID_ARGUMENT.withDescription(
                  "the args do not fit the input schema of "
                      + r.pending().call().key()
                      + ": "
                      + r.violation()
                      + "; approval "
                      + id
                      + " is still waiting"));
    };
  }

  /** The runtime's resolveActor: the request's, else {@code PHRONY_ACTOR}, else the OS user. */
  private static String actor(String given) {
    if (!given.isBlank()) {
      return given.strip();
    }
    String env = System.getenv("PHRONY_ACTOR");
    return env != null && !env.isBlank() ? env.strip() : System.getProperty("user.name", "");
  }

  private String notLoaded(AgentRef ref) {
    String wanted =
        ref.getNamespace()
            + "/"
            + ref.getName()
            + (ref.getVersion().isBlank() ? "" : "@" + ref.getVersion());
    String loaded =
        agents.all().stream()
            .map(a -> a.namespace() + "/" + a.name() + "@" + a.version())
            .collect(Collectors.joining(", "));
    return "agent "
        + wanted
        + " is not loaded: dev runs the agents given with --agent"
        + (loaded.isEmpty() ? " (none were)" : " (loaded: " + loaded + ")");
  }

  /** The runtime's session input: empty is {@code {}}, else a JSON object. */
  private static Optional<String> input(String raw) {
    if (raw.isBlank()) {
      return Optional.of("{}");
    }
    try {
      JsonNode n = Json.MAPPER.readTree(raw);
      return n != null && n.isObject() ? Optional.of(raw) : Optional.empty();
    } catch (IOException e) {
      return Optional.empty();
    }
  }

  /**
   * A stream observer several threads send on, one message at a time (gRPC's is not thread safe),
   * that ignores whatever comes after its end (the session and the client may both end it).
   */
  private static final class Serialized implements StreamObserver<RunSessionInteractiveServerMsg> {
    private final StreamObserver<RunSessionInteractiveServerMsg> out;
    private boolean closed;

    Serialized(StreamObserver<RunSessionInteractiveServerMsg> out) {
      this.out = out;
    }

    @Override
    public synchronized void onNext(RunSessionInteractiveServerMsg m) {
      if (!closed) {
        out.onNext(m);
      }
    }

    @Override
    public synchronized void onError(Throwable t) {
      if (!closed) {
        closed = true;
        out.onError(t);
      }
    }

    @Override
    public synchronized void onCompleted() {
      if (!closed) {
        closed = true;
        out.onCompleted();
      }
    }
  }
}
