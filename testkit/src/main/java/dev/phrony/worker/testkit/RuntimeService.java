package dev.phrony.worker.testkit;

import dev.phrony.runtime.v1.Approval;
import dev.phrony.runtime.v1.CancelSessionRequest;
import dev.phrony.runtime.v1.CancelSessionResponse;
import dev.phrony.runtime.v1.DecideApprovalRequest;
import dev.phrony.runtime.v1.DecideApprovalResponse;
import dev.phrony.runtime.v1.GetApprovalRequest;
import dev.phrony.runtime.v1.GetVersionRequest;
import dev.phrony.runtime.v1.GetVersionResponse;
import dev.phrony.runtime.v1.ListApprovalsRequest;
import dev.phrony.runtime.v1.ListApprovalsResponse;
import dev.phrony.runtime.v1.RunSessionInteractiveClientMsg;
import dev.phrony.runtime.v1.RunSessionInteractiveServerMsg;
import dev.phrony.runtime.v1.RuntimeGrpc;
import dev.phrony.runtime.v1.WorkClientMsg;
import dev.phrony.runtime.v1.WorkServerMsg;
import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.util.concurrent.atomic.AtomicLong;

/**
 * {@code phrony.runtime.v1.Runtime} for one server incarnation: its streams talk to one {@link
 * Registry}. The session and approval RPCs go to the {@linkplain LocalRuntime.Builder#sessions
 * embedder's implementation} (UNIMPLEMENTED without one).
 */
final class RuntimeService extends RuntimeGrpc.RuntimeImplBase {

  private final Registry registry;
  private final EventLog events;
  private final AtomicLong streamIds;
  private final RuntimeSettings settings;
  private final RuntimeGrpc.AsyncService sessions;

  RuntimeService(
      Registry registry,
      EventLog events,
      AtomicLong streamIds,
      RuntimeSettings settings,
      RuntimeGrpc.AsyncService sessions) {
    this.sessions = sessions;
    this.registry = registry;
    this.events = events;
    this.streamIds = streamIds;
    this.settings = settings;
  }

  @Override
  public StreamObserver<WorkClientMsg> work(StreamObserver<WorkServerMsg> responseObserver) {
    var call = (ServerCallStreamObserver<WorkServerMsg>) responseObserver;
    WorkerStream out = new WorkerStream(streamIds.incrementAndGet(), call, events);
    // Inbound credit is handed out in batches by the writer, not one message at a time.
    call.disableAutoRequest();
    call.setOnReadyHandler(out::flush);
    call.setOnCancelHandler(
        () -> out.abort(Status.CANCELLED.withDescription("cancelled by the client or transport")));
    call.request(WorkerStream.INITIAL_REQUEST);
    return new WorkStream(
        registry, out, events, settings.leaseTtl().toMillis(), settings.maxInboundMessageSize());
  }

  @Override
  public void getVersion(
      GetVersionRequest request, StreamObserver<GetVersionResponse> responseObserver) {
    responseObserver.onNext(
        GetVersionResponse.newBuilder()
            .setVersion(settings.version())
            .setSchemaVersion(settings.schemaVersion())
            .build());
    responseObserver.onCompleted();
  }

  @Override
  public StreamObserver<RunSessionInteractiveClientMsg> runSessionInteractive(
      StreamObserver<RunSessionInteractiveServerMsg> responseObserver) {
    return sessions.runSessionInteractive(responseObserver);
  }

  @Override
  public void cancelSession(
      CancelSessionRequest request, StreamObserver<CancelSessionResponse> responseObserver) {
    sessions.cancelSession(request, responseObserver);
  }

  @Override
  public void getApproval(GetApprovalRequest request, StreamObserver<Approval> responseObserver) {
    sessions.getApproval(request, responseObserver);
  }

  @Override
  public void listApprovals(
      ListApprovalsRequest request, StreamObserver<ListApprovalsResponse> responseObserver) {
    sessions.listApprovals(request, responseObserver);
  }

  @Override
  public void decideApproval(
      DecideApprovalRequest request, StreamObserver<DecideApprovalResponse> responseObserver) {
    sessions.decideApproval(request, responseObserver);
  }
}
