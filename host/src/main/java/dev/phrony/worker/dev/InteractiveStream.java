package dev.phrony.worker.dev;

import dev.phrony.runtime.v1.RunSessionInteractiveClientMsg;
import dev.phrony.runtime.v1.RunSessionInteractiveServerMsg;
import dev.phrony.runtime.v1.RunSessionInteractiveStart;
import dev.phrony.runtime.v1.RuntimeGrpc;
import dev.phrony.worker.UserErrorException;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * One {@code RunSessionInteractive} stream of the CLI ({@code call}, {@code call --follow}) to a
 * runtime address: the client's messages go out as given, the server's are taken one at a time,
 * then how the stream ended. Closing it shuts its channel down.
 */
final class InteractiveStream implements AutoCloseable {

  /** An event, or how the stream ended. */
  sealed interface Item {}

  record Event(RunSessionInteractiveServerMsg msg) implements Item {}

  record End(Status status) implements Item {}

  private final String target;
  private final ManagedChannel channel;
  private final LinkedBlockingQueue<Item> items = new LinkedBlockingQueue<>();
  private final StreamObserver<RunSessionInteractiveClientMsg> requests;

  /** Opens a stream to {@code target} and sends {@code start}. */
  InteractiveStream(String target, RunSessionInteractiveStart start) {
    this.target = target;
    this.channel = NettyChannelBuilder.forTarget(target).usePlaintext().build();
    this.requests =
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
    requests.onNext(RunSessionInteractiveClientMsg.newBuilder().setStart(start).build());
  }

  /** The next event, or the end (which is then all there is). */
  Item next() throws InterruptedException {
    return items.take();
  }

  /** Closes the client's side, and waits up to {@code wait} for the server to end the stream. */
  void closeSend(Duration wait) throws InterruptedException {
    requests.onCompleted();
    while (true) {
      Item i = items.poll(wait.toMillis(), TimeUnit.MILLISECONDS);
      if (i == null || i instanceof End) {
        return;
      }
    }
  }

  /**
   * What the CLI says when a stream ends with {@code status}: nothing answering at the address is
   * {@link ControlUnreachableException} (exit 6), the runtime's refusal a user error.
   */
  RuntimeException failure(Status status) {
    String why =
        status.getDescription() == null ? status.getCode().toString() : status.getDescription();
    if (status.getCode() == Status.Code.UNAVAILABLE) {
      return new ControlUnreachableException(
          "no runtime answers at "
              + target
              + " ("
              + why
              + "): start one with 'phrony-worker dev', or give its address with --runtime or $"
              + ApprovalsClient.ENV_RUNTIME);
    }
    if (status.getCode() == Status.Code.UNIMPLEMENTED) {
      return new ControlUnreachableException(
          target + " does not serve the runtime's session API (" + why + ")");
    }
    return new UserErrorException(why);
  }

  @Override
  public void close() {
    channel.shutdownNow();
  }
}
