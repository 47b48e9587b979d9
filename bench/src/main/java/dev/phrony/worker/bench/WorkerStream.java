package dev.phrony.worker.bench;

import dev.phrony.runtime.v1.WorkClientMsg;
import dev.phrony.runtime.v1.WorkInvoke;
import dev.phrony.runtime.v1.WorkServerMsg;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import java.util.concurrent.CountDownLatch;

/**
 * The worker side of a {@code Work} stream with the host's flow control, for the bench's own
 * workers (the ceiling's client, the stand-in peers): inbound requested in batches ({@link
 * #INBOUND_BATCH} up front, half as many more per half read), outbound through a {@link Writer}
 * that honours {@code isReady}/{@code onReady}. A subclass answers the invokes; {@code done} counts
 * down when the stream ends.
 */
abstract class WorkerStream implements ClientResponseObserver<WorkClientMsg, WorkServerMsg> {
  static final int INBOUND_BATCH = 256;

  private final CountDownLatch done;
  private ClientCallStreamObserver<WorkClientMsg> requests;
  private volatile Writer<WorkClientMsg> writer;
  private int received;

  WorkerStream(CountDownLatch done) {
    this.done = done;
  }

  /** Answers one invoke (on the stream's thread). */
  abstract void onInvoke(WorkInvoke invoke);

  /** Sends {@code msg}; any thread. */
  void send(WorkClientMsg msg) {
    writer.send(msg);
  }

  /** Writes what is queued while the stream is ready (its onReady handler). */
  void drain() {
    writer.drain();
  }

  @Override
  public final void beforeStart(ClientCallStreamObserver<WorkClientMsg> requestStream) {
    requests = requestStream;
    writer = new Writer<>(requestStream);
    requestStream.disableAutoRequestWithInitial(INBOUND_BATCH);
    requestStream.setOnReadyHandler(this::drain);
  }

  @Override
  public final void onNext(WorkServerMsg msg) {
    if (msg.hasInvoke()) {
      onInvoke(msg.getInvoke());
    }
    if (++received >= INBOUND_BATCH / 2) {
      received = 0;
      requests.request(INBOUND_BATCH / 2);
    }
  }

  @Override
  public final void onError(Throwable t) {
    done.countDown();
  }

  @Override
  public final void onCompleted() {
    requests.onCompleted();
    done.countDown();
  }
}
