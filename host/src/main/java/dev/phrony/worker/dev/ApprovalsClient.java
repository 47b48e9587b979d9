package dev.phrony.worker.dev;

import com.google.protobuf.ByteString;
import dev.phrony.runtime.v1.Approval;
import dev.phrony.runtime.v1.ApprovalDecision;
import dev.phrony.runtime.v1.DecideApprovalRequest;
import dev.phrony.runtime.v1.DecideApprovalResponse;
import dev.phrony.runtime.v1.GetApprovalRequest;
import dev.phrony.runtime.v1.ListApprovalsRequest;
import dev.phrony.runtime.v1.RuntimeGrpc;
import dev.phrony.worker.UserErrorException;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.NettyChannelBuilder;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * {@code approvals}, {@code approve} and {@code deny} as clients of the runtime's approval RPCs
 * ({@code ListApprovals}, {@code GetApproval}, {@code DecideApproval}) on a runtime address: {@code
 * dev}'s (which answers for its sessions' approvals and the calls {@code --require-approval} holds)
 * or a Phrony runtime's.
 */
public final class ApprovalsClient implements AutoCloseable {

  /** The runtime address when none is given: the runtime's CLI's variable. */
  public static final String ENV_RUNTIME = "PHRONY_RUNTIME_ADDR";

  public static final String DEFAULT_RUNTIME = "127.0.0.1:7777";

  private static final Duration DEADLINE = Duration.ofSeconds(10);

  private final String target;
  private final ManagedChannel channel;

  private ApprovalsClient(String target) {
    this.target = target;
    this.channel = NettyChannelBuilder.forTarget(target).usePlaintext().build();
  }

  /** A client of {@code target} ({@code host:port}). */
  public static ApprovalsClient of(String target) {
    return new ApprovalsClient(target.strip());
  }

  /** The runtime address. */
  public String target() {
    return target;
  }

  /** The approvals waiting for a decision. */
  public List<Approval> pending() {
    return call(
        () ->
            stub()
                .listApprovals(ListApprovalsRequest.newBuilder().setStatus("pending").build())
                .getApprovalsList());
  }

  /** One approval. */
  public Approval get(String approvalId) {
    return call(
        () ->
            stub().getApproval(GetApprovalRequest.newBuilder().setApprovalId(approvalId).build()));
  }

  /**
   * Approves or denies.
   *
   * @param args replacement arguments (JSON) of an approval, or null
   * @param actor who decides (empty: the runtime's default, {@code PHRONY_ACTOR} or the OS user)
   */
  public DecideApprovalResponse decide(
      String approvalId, boolean approve, String comment, String args, String actor) {
    DecideApprovalRequest.Builder r =
        DecideApprovalRequest.newBuilder()
            .setApprovalId(approvalId)
            .setDecision(
                approve
                    ? ApprovalDecision.APPROVAL_DECISION_APPROVE
                    : ApprovalDecision.APPROVAL_DECISION_REJECT)
            .setComment(comment == null ? "" : comment)
            .setActor(actor == null ? "" : actor);
    if (args != null) {
      r.setArgs(ByteString.copyFromUtf8(args));
    }
    return call(() -> stub().decideApproval(r.build()));
  }

  private RuntimeGrpc.RuntimeBlockingStub stub() {
    return RuntimeGrpc.newBlockingStub(channel)
        .withDeadlineAfter(DEADLINE.toMillis(), TimeUnit.MILLISECONDS);
  }

  /** An RPC; the runtime's refusal is a user error, no answer at all exit 6. */
  private <T> T call(Supplier<T> rpc) {
    try {
      return rpc.get();
    } catch (StatusRuntimeException e) {
      Status s = e.getStatus();
      String why = s.getDescription() == null ? s.getCode().toString() : s.getDescription();
      switch (s.getCode()) {
        case UNAVAILABLE, DEADLINE_EXCEEDED ->
            throw new ControlUnreachableException(
                "no runtime answers at "
                    + target
                    + " ("
                    + why
                    + "): start one with 'phrony-worker dev', or give its address with --runtime"
                    + " or $"
                    + ENV_RUNTIME);
        case UNIMPLEMENTED ->
            throw new ControlUnreachableException(
                target + " does not serve the runtime's approval API (" + why + ")");
        default -> throw new Refused(why, s.getCode());
      }
    }
  }

  /** The runtime refused a request; {@code code} says how. */
  public static final class Refused extends UserErrorException {
    private static final long serialVersionUID = 1L;

    private final transient Status.Code code;

    Refused(String message, Status.Code code) {
      super(message);
      this.code = code;
    }

    public Status.Code code() {
      return code;
    }
  }

  @Override
  public void close() {
    channel.shutdownNow();
  }
}
