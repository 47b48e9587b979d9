package dev.phrony.worker.bench;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * A loopback TCP relay between a worker and its runtime that counts the HTTP/2 frames crossing it
 * in each direction, by type, with the DATA payload bytes and the reads that carried them. It
 * forwards each read as it arrives (TCP_NODELAY both ways), so it adds a hop's latency but no
 * batching of its own; the counts say how each peer frames its messages, not how fast it is. Only
 * the 9-byte frame headers are parsed (after the client's 24-byte preface); payloads pass through
 * untouched, so TLS or h2c with a prior-knowledge preface is all it understands.
 */
final class FrameRelay implements AutoCloseable {
  /** HTTP/2 frame type names by code (RFC 9113 section 6). */
  static final List<String> TYPES =
      List.of(
          "DATA",
          "HEADERS",
          "PRIORITY",
          "RST_STREAM",
          "SETTINGS",
          "PUSH_PROMISE",
          "PING",
          "GOAWAY",
          "WINDOW_UPDATE",
          "CONTINUATION");

  private static final int PREFACE = 24;
  private static final int OTHER = TYPES.size();
  // per direction: frames by type, then other types, DATA payload bytes, all bytes, reads
  private static final int DATA_BYTES = OTHER + 1;
  private static final int BYTES = OTHER + 2;
  private static final int READS = OTHER + 3;
  private static final int SLOTS = OTHER + 4;

  /** Counts of one direction at one moment; {@link #minus} gives what crossed in between. */
  record Counts(long[] values) {
    Counts minus(Counts earlier) {
      long[] d = new long[SLOTS];
      for (int i = 0; i < SLOTS; i++) {
        d[i] = values[i] - earlier.values[i];
      }
      return new Counts(d);
    }

    long frames(String type) {
      return values[TYPES.indexOf(type)];
    }

    long frames() {
      long n = 0;
      for (int i = 0; i <= OTHER; i++) {
        n += values[i];
      }
      return n;
    }

    long dataBytes() {
      return values[DATA_BYTES];
    }

    long bytes() {
      return values[BYTES];
    }

    long reads() {
      return values[READS];
    }

    /** Per-call figures of this difference over {@code calls} calls, for the JSON report. */
    Map<String, Object> perCall(long calls) {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("frames", per(frames(), calls));
      for (int i = 0; i < TYPES.size(); i++) {
        if (values[i] > 0) {
          m.put(TYPES.get(i).toLowerCase(java.util.Locale.ROOT), per(values[i], calls));
        }
      }
      m.put(
          "data_bytes_per_frame",
          frames("DATA") == 0 ? 0.0 : Math.round(10.0 * dataBytes() / frames("DATA")) / 10.0);
      m.put("bytes", per(bytes(), calls));
      m.put("reads", per(reads(), calls));
      return m;
    }

    private static double per(long n, long calls) {
      return calls == 0 ? Double.NaN : Math.round(1000.0 * n / calls) / 1000.0;
    }
  }

  private final ServerSocket server;
  private final InetSocketAddress upstream;
  private final AtomicLongArray toRuntime = new AtomicLongArray(SLOTS);
  private final AtomicLongArray toWorker = new AtomicLongArray(SLOTS);
  private final List<Socket> sockets = new CopyOnWriteArrayList<>();

  private FrameRelay(ServerSocket server, InetSocketAddress upstream) {
    this.server = server;
    this.upstream = upstream;
  }

  /** A relay on a free loopback port to the runtime's gRPC address {@code host:port}. */
  static FrameRelay to(String target) throws IOException {
    int colon = target.lastIndexOf(':');
    InetSocketAddress up =
        new InetSocketAddress(
            target.substring(0, colon), Integer.parseInt(target.substring(colon + 1)));
    FrameRelay relay =
        new FrameRelay(new ServerSocket(0, 50, InetAddress.getLoopbackAddress()), up);
    Thread.ofPlatform().daemon().name("relay-accept").start(relay::accept);
    return relay;
  }

  /** The address a worker dials instead of the runtime's. */
  String target() {
    return "127.0.0.1:" + server.getLocalPort();
  }

  Counts workerToRuntime() {
    return snapshot(toRuntime);
  }

  Counts runtimeToWorker() {
    return snapshot(toWorker);
  }

  private static Counts snapshot(AtomicLongArray a) {
    long[] v = new long[SLOTS];
    for (int i = 0; i < SLOTS; i++) {
      v[i] = a.get(i);
    }
    return new Counts(v);
  }

  private void accept() {
    while (!server.isClosed()) {
      try {
        Socket worker = server.accept();
        Socket runtime = new Socket();
        runtime.connect(upstream, 5000);
        for (Socket s : List.of(worker, runtime)) {
          s.setTcpNoDelay(true);
          sockets.add(s);
        }
        pump("relay-up", worker, runtime, toRuntime, PREFACE);
        pump("relay-down", runtime, worker, toWorker, 0);
      } catch (IOException e) {
        if (!server.isClosed()) {
          System.err.println("bench: frame relay: " + e.getMessage());
        }
      }
    }
  }

  private static void pump(
      String name, Socket from, Socket to, AtomicLongArray counts, int preface) {
    Thread.ofPlatform()
        .daemon()
        .name(name)
        .start(
            () -> {
              FrameCounter counter = new FrameCounter(counts, preface);
              byte[] buf = new byte[64 * 1024];
              try (InputStream in = from.getInputStream();
                  OutputStream out = to.getOutputStream()) {
                int n;
                while ((n = in.read(buf)) > 0) {
                  out.write(buf, 0, n);
                  counter.accept(buf, n);
                }
              } catch (IOException e) {
                // either side closed: close the other so the peer sees the stream end
              } finally {
                closeQuietly(from);
                closeQuietly(to);
              }
            });
  }

  /** Walks one direction's bytes frame header by frame header. */
  private static final class FrameCounter {
    private final AtomicLongArray counts;
    private long skip; // bytes of preface or payload still to pass before the next header
    private final byte[] header = new byte[9];
    private int have;

    FrameCounter(AtomicLongArray counts, int preface) {
      this.counts = counts;
      this.skip = preface;
    }

    void accept(byte[] buf, int n) {
      counts.incrementAndGet(READS);
      counts.addAndGet(BYTES, n);
      int i = 0;
      while (i < n) {
        if (skip > 0) {
          int k = (int) Math.min(skip, n - i);
          skip -= k;
          i += k;
          continue;
        }
        int k = Math.min(header.length - have, n - i);
        System.arraycopy(buf, i, header, have, k);
        have += k;
        i += k;
        if (have == header.length) {
          int length = (header[0] & 0xff) << 16 | (header[1] & 0xff) << 8 | header[2] & 0xff;
          int type = header[3] & 0xff;
          counts.incrementAndGet(type < OTHER ? type : OTHER);
          if (type == 0) {
            counts.addAndGet(DATA_BYTES, length);
          }
          skip = length;
          have = 0;
        }
      }
    }
  }

  private static void closeQuietly(Socket s) {
    try {
      s.close();
    } catch (IOException e) {
      // closing: nothing to do
    }
  }

  @Override
  public void close() throws IOException {
    server.close();
    for (Socket s : sockets) {
      closeQuietly(s);
    }
  }
}
