package dev.phrony.worker.testkit;

import io.grpc.Status;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.stub.StreamObserver;

/**
 * {@code grpc.health.v1.Health} as the runtime serves it: {@code ""} and {@code
 * phrony.runtime.v1.Runtime} are SERVING while the server runs, any other name answers
 * SERVICE_UNKNOWN (not a NOT_FOUND error), and Watch is unimplemented.
 */
final class HealthService extends HealthGrpc.HealthImplBase {

  static final String RUNTIME_SERVICE = "phrony.runtime.v1.Runtime";

  @Override
  public void check(
      HealthCheckRequest request, StreamObserver<HealthCheckResponse> responseObserver) {
    String service = request.getService();
    var status =
        service.isEmpty() || service.equals(RUNTIME_SERVICE)
            ? HealthCheckResponse.ServingStatus.SERVING
            : HealthCheckResponse.ServingStatus.SERVICE_UNKNOWN;
    responseObserver.onNext(HealthCheckResponse.newBuilder().setStatus(status).build());
    responseObserver.onCompleted();
  }

  @Override
  public void watch(
      HealthCheckRequest request, StreamObserver<HealthCheckResponse> responseObserver) {
    responseObserver.onError(
        Status.UNIMPLEMENTED.withDescription("Watch is not implemented yet").asRuntimeException());
  }
}
