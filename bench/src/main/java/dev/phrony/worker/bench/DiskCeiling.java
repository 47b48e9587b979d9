package dev.phrony.worker.bench;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The disk's share of row 5b: {@code callers} threads that each, call after call, wait for two
 * group-committed flushes one after the other (the intent before the handler may run, then the
 * result before it may be sent) and do nothing else. The flushes are made as the host's outbox
 * makes them: one writer takes everything queued, writes it at the end of a zero-filled file and
 * {@code fdatasync}s it, so a flush costs the device's cache flush and no file metadata. No gRPC,
 * no handler, no runtime: the rate is what this machine's disk allows a worker that keeps the
 * durable path's two-flush rule, whatever its own speed.
 */
final class DiskCeiling implements AutoCloseable {
  /** One run: calls (two flushes each) per second, and device flushes per call. */
  record Run(double perSecond, long calls, double flushesPerCall) {}

  // Sizes of a payments call's intent and result records in the host's outbox.
  private static final int INTENT_BYTES = 160;
  private static final int RESULT_BYTES = 240;
  private static final long FILE_BYTES = 4L << 20; // the outbox's segment size

  private final Path file;
  private final FileChannel channel;
  private final Thread writer;
  private final ReentrantLock lock = new ReentrantLock();
  private final Condition wake = lock.newCondition();
  private List<CompletableFuture<Void>> queue = new ArrayList<>();
  private int queuedBytes;
  private boolean closing;
  private final AtomicLong flushes = new AtomicLong();

  DiskCeiling(Path dir) throws IOException {
    Files.createDirectories(dir);
    this.file = dir.resolve("disk-ceiling.dat");
    this.channel =
        FileChannel.open(
            file,
            StandardOpenOption.CREATE,
            StandardOpenOption.WRITE,
            StandardOpenOption.TRUNCATE_EXISTING);
    ByteBuffer zeros = ByteBuffer.allocate(256 << 10);
    for (long pos = 0; pos < FILE_BYTES; ) {
      zeros.clear();
      pos += channel.write(zeros, pos);
    }
    channel.force(true);
    this.writer = Thread.ofPlatform().daemon().name("disk-ceiling-writer").start(this::write);
  }

  /**
   * Runs {@code callers} callers for {@code warmup}, then counts their calls for {@code measure}.
   */
  Run run(int callers, Duration warmup, Duration measure) throws InterruptedException {
    long from = System.nanoTime() + warmup.toNanos();
    long until = from + measure.toNanos();
    AtomicLong calls = new AtomicLong();
    List<Thread> threads = new ArrayList<>();
    for (int i = 0; i < callers; i++) {
      threads.add(
          Thread.ofVirtual()
              .start(
                  () -> {
                    while (true) {
                      long now = System.nanoTime();
                      if (now >= until) {
                        return;
                      }
                      boolean counting = now >= from;
                      flush(INTENT_BYTES).join();
                      flush(RESULT_BYTES).join();
                      if (counting && System.nanoTime() < until) {
                        calls.incrementAndGet();
                      }
                    }
                  }));
    }
    LockSupport.parkNanos(Math.max(0, from - System.nanoTime()));
    long flushesFrom = flushes.get();
    LockSupport.parkNanos(Math.max(0, until - System.nanoTime()));
    long flushesUntil = flushes.get();
    for (Thread t : threads) {
      t.join();
    }
    long n = calls.get();
    return new Run(
        n / (measure.toNanos() / 1e9),
        n,
        n == 0 ? Double.NaN : (double) (flushesUntil - flushesFrom) / n);
  }

  private CompletableFuture<Void> flush(int bytes) {
    CompletableFuture<Void> done = new CompletableFuture<>();
    lock.lock();
    try {
      queue.add(done);
      queuedBytes += bytes;
      wake.signal();
    } finally {
      lock.unlock();
    }
    return done;
  }

  private void write() {
    ByteBuffer buf = ByteBuffer.allocate(64 << 10);
    for (int i = 0; i < buf.capacity(); i++) {
      buf.put(i, (byte) (i * 31 + 7)); // not zeros: the device is given data to store
    }
    long pos = 0;
    while (true) {
      List<CompletableFuture<Void>> batch;
      int bytes;
      lock.lock();
      try {
        while (queue.isEmpty() && !closing) {
          wake.awaitUninterruptibly();
        }
        if (queue.isEmpty()) {
          return;
        }
        batch = queue;
        bytes = Math.min(queuedBytes, buf.capacity());
        queue = new ArrayList<>();
        queuedBytes = 0;
      } finally {
        lock.unlock();
      }
      try {
        if (pos + bytes > FILE_BYTES) {
          pos = 0; // over the file's own zeros again: still no metadata to flush
        }
        buf.clear().limit(bytes);
        while (buf.hasRemaining()) {
          pos += channel.write(buf, pos);
        }
        channel.force(false);
        flushes.incrementAndGet();
        batch.forEach(f -> f.complete(null));
      } catch (IOException e) {
        batch.forEach(f -> f.completeExceptionally(e));
      }
    }
  }

  @Override
  public void close() throws IOException, InterruptedException {
    lock.lock();
    try {
      closing = true;
      wake.signal();
    } finally {
      lock.unlock();
    }
    writer.join();
    channel.close();
    Files.deleteIfExists(file);
  }
}
