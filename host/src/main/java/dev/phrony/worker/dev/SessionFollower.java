package dev.phrony.worker.dev;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.google.protobuf.ByteString;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Message;
import dev.phrony.runtime.v1.RunSessionInteractiveClientMsg;
import dev.phrony.runtime.v1.RunSessionInteractiveServerMsg;
import dev.phrony.runtime.v1.RunSessionInteractiveStart;
import dev.phrony.runtime.v1.RuntimeGrpc;
import dev.phrony.worker.UserErrorException;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.StreamObserver;
import java.io.PrintWriter;
import java.util.concurrent.LinkedBlockingQueue;

/**
 * {@code call --session ID --follow --runtime ADDR}: attaches to a session of the runtime's session
 * API ({@code RunSessionInteractive} with {@code start.session_id}) and prints each of its events
 * as one JSON line, named as the proto names it ({@code {"tool_call": {"call_id": ..., "args":
 * {...}}}}; {@code bytes} fields holding JSON, as {@code args} and {@code payload} do, are shown as
 * that JSON), until the session ends.
 */
public final class SessionFollower {
  private SessionFollower() {}

  /** An event, or how the stream ended. */
  private sealed interface Item {}

  private record Event(RunSessionInteractiveServerMsg msg) implements Item {}

  private record End(Status status) implements Item {}

  /**
   * Follows session {@code sessionId} at {@code target} until it ends.
   *
   * @throws UserErrorException when the runtime refuses (no such session)
   * @throws ControlUnreachableException when nothing answers at {@code target}
   */
  public static void follow(String target, String sessionId, PrintWriter out)
      throws InterruptedException {
    ManagedChannel channel = NettyChannelBuilder.forTarget(target).usePlaintext().build();
    try {
      LinkedBlockingQueue<Item> items = new LinkedBlockingQueue<>();
      StreamObserver<RunSessionInteractiveClientMsg> stream =
          RuntimeGrpc.newStub(channel)
              .runSessionInteractive(
                  new StreamObserver<>() {
                    @Override
                    public void onNext(RunSessionInteractiveServerMsg m) {
                      items.add(new Event(m));
                    }

                    @Override
                    public void onError(Throwable t) {
                      items.add(new End(Status.fromThrowable(t)));
                    }

                    @Override
                    public void onCompleted() {
                      items.add(new End(Status.OK));
                    }
                  });
      stream.onNext(
          RunSessionInteractiveClientMsg.newBuilder()
              .setStart(RunSessionInteractiveStart.newBuilder().setSessionId(sessionId))
              .build());
      while (true) {
        switch (items.take()) {
          case Event e -> {
            out.println(json(e.msg()));
            out.flush();
          }
          case End end -> {
            Status s = end.status();
            if (s.isOk()) {
              return;
            }
            String why = s.getDescription() == null ? s.getCode().toString() : s.getDescription();
            if (s.getCode() == Status.Code.UNAVAILABLE) {
              throw new ControlUnreachableException(
                  "no runtime answers at "
                      + target
                      + " ("
                      + why
                      + "): start one with 'phrony-worker dev', or give its address with"
                      + " --runtime");
            }
            throw new UserErrorException(why);
          }
        }
      }
    } finally {
      channel.shutdownNow();
    }
  }

  private static String json(RunSessionInteractiveServerMsg m) {
    return object(m).toString();
  }

  /** A message's set fields, by their proto names. */
  private static ObjectNode object(Message m) {
    ObjectNode o = JsonNodeFactory.instance.objectNode();
    for (var e : m.getAllFields().entrySet()) {
      FieldDescriptor f = e.getKey();
      if (f.isRepeated()) {
        ArrayNode a = o.putArray(f.getName());
        for (Object item : (java.util.List<?>) e.getValue()) {
          a.add(value(item));
        }
      } else {
        o.set(f.getName(), value(e.getValue()));
      }
    }
    return o;
  }

  private static JsonNode value(Object v) {
    JsonNodeFactory f = JsonNodeFactory.instance;
    return switch (v) {
      case Message m -> object(m);
      case ByteString b -> {
        try {
          yield Json.parse(b.toStringUtf8());
        } catch (RuntimeException notJson) {
          yield f.textNode(b.toStringUtf8());
        }
      }
      case Boolean b -> f.booleanNode(b);
      case Integer i -> f.numberNode(i);
      case Long l -> f.numberNode(l);
      default -> f.textNode(String.valueOf(v));
    };
  }
}
