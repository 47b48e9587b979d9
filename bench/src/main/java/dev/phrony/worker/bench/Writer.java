package dev.phrony.worker.bench;

import io.grpc.stub.CallStreamObserver;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The single writer of one side of a stream, as the host's own writer does it: any thread may
 * {@link #send}, messages go out in order only while {@code isReady}, the rest on {@code onReady},
 * and a work-in-progress counter keeps it to one thread at a time without a lock.
 */
final class Writer<T> {
  private final CallStreamObserver<T> out;
  private final ConcurrentLinkedQueue<T> queue = new ConcurrentLinkedQueue<>();
  private final AtomicInteger wip = new AtomicInteger();

  Writer(CallStreamObserver<T> out) {
    this.out = out;
  }

  void send(T msg) {
    queue.add(msg);
    drain();
  }

  void drain() {
    if (wip.getAndIncrement() != 0) {
      return;
    }
    int missed = 1;
    do {
      while (out.isReady()) {
        T m = queue.poll();
        if (m == null) {
          break;
        }
        out.onNext(m);
      }
      missed = wip.addAndGet(-missed);
    } while (missed != 0);
  }
}
