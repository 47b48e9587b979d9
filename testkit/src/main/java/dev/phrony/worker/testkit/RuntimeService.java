package dev.phrony.worker.testkit;

import dev.phrony.runtime.v1.GetVersionRequest;
import dev.phrony.runtime.v1.GetVersionResponse;
import dev.phrony.runtime.v1.RuntimeGrpc;
import dev.phrony.runtime.v1.WorkClientMsg;
import dev.phrony.runtime.v1.WorkServerMsg;
import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.util.concurrent.atomic.AtomicLong;

/**
 * {@code phrony.runtime.v1.Runtime} for one server incarnation: its streams talk to one {@link
 * Registry}.
 */
final class RuntimeService extends RuntimeGrpc.RuntimeImplBase {

  private final Registry registry;
  private final EventLog events;
  private final AtomicLong streamIds;
  private final RuntimeSettings settings;

  RuntimeService(
      Registry registry, EventLog events, AtomicLong streamIds, RuntimeSettings settings) {
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
}
