package dev.phrony.worker.dev;

import dev.phrony.runtime.v1.RuntimeGrpc;
import io.grpc.HandlerRegistry;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerMethodDefinition;
import io.grpc.Status;
import java.io.ByteArrayInputStream;
import java.io.InputStream;

/**
 * The runtime's RPCs dev does not serve (publish, deploy, RunSession, ListSessions...): each
 * answers UNIMPLEMENTED saying which ones dev serves, instead of gRPC's bare "method not found".
 */
final class DevOnlyMethods extends HandlerRegistry {

  static final String SERVED =
      "Work, GetVersion, RunSessionInteractive, CancelSession, GetApproval, ListApprovals and"
          + " DecideApproval (and grpc.health.v1.Health)";

  @Override
  public ServerMethodDefinition<?, ?> lookupMethod(String methodName, String authority) {
    String service = MethodDescriptor.extractFullServiceName(methodName);
    if (!RuntimeGrpc.SERVICE_NAME.equals(service)) {
      return null;
    }
    String method = methodName.substring(methodName.indexOf('/') + 1);
    MethodDescriptor<InputStream, InputStream> descriptor =
        MethodDescriptor.<InputStream, InputStream>newBuilder()
            .setType(MethodDescriptor.MethodType.UNKNOWN)
            .setFullMethodName(methodName)
            .setRequestMarshaller(Raw.INSTANCE)
            .setResponseMarshaller(Raw.INSTANCE)
            .build();
    ServerCallHandler<InputStream, InputStream> refuse =
        new ServerCallHandler<>() {
          @Override
          public ServerCall.Listener<InputStream> startCall(
              ServerCall<InputStream, InputStream> call, Metadata headers) {
            call.close(
                Status.UNIMPLEMENTED.withDescription(
                    "phrony-worker dev serves only "
                        + SERVED
                        + " of the runtime's API; "
                        + method
                        + " needs the Phrony runtime itself"),
                new Metadata());
            return new ServerCall.Listener<>() {};
          }
        };
    return ServerMethodDefinition.create(descriptor, refuse);
  }

  /** Messages as bytes, never parsed. */
  private enum Raw implements MethodDescriptor.Marshaller<InputStream> {
    INSTANCE;

    @Override
    public InputStream stream(InputStream value) {
      return value;
    }

    @Override
    public InputStream parse(InputStream stream) {
      return stream == null ? new ByteArrayInputStream(new byte[0]) : stream;
    }
  }
}
