package dev.phrony.worker.bench;

import static org.assertj.core.api.Assertions.assertThat;

import dev.phrony.worker.testkit.Await;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

/** The relay passes bytes through unchanged and counts frames whatever the reads cut them to. */
class FrameRelayTest {
  private static final Duration WAIT = Duration.ofSeconds(10);

  @Test
  void counts_frames_by_type_across_reads_that_split_headers_and_payloads() throws Exception {
    try (ServerSocket runtime = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
        FrameRelay relay = FrameRelay.to("127.0.0.1:" + runtime.getLocalPort());
        Socket worker =
            new Socket(
                "127.0.0.1",
                Integer.parseInt(relay.target().substring(relay.target().indexOf(':') + 1)));
        Socket upstream = runtime.accept()) {
      ByteArrayOutputStream sent = new ByteArrayOutputStream();
      sent.write("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
      sent.write(frame(4, 6)); // SETTINGS
      sent.write(frame(0, 40)); // DATA
      sent.write(frame(0, 300)); // DATA
      sent.write(frame(6, 8)); // PING
      sent.write(frame(8, 4)); // WINDOW_UPDATE
      sent.write(frame(0xfa, 2)); // an unknown type
      byte[] all = sent.toByteArray();
      OutputStream out = worker.getOutputStream();
      // cut inside the preface, inside a header and inside a payload, each flushed on its own
      for (int[] cut : new int[][] {{0, 10}, {10, 37}, {37, 60}, {60, all.length}}) {
        out.write(all, cut[0], cut[1] - cut[0]);
        out.flush();
      }
      byte[] got = readN(upstream.getInputStream(), all.length);
      assertThat(got).isEqualTo(all);
      Await.until("all bytes counted", () -> relay.workerToRuntime().bytes() == all.length, WAIT);

      FrameRelay.Counts up = relay.workerToRuntime();
      assertThat(up.frames()).isEqualTo(6);
      assertThat(up.frames("DATA")).isEqualTo(2);
      assertThat(up.dataBytes()).isEqualTo(340);
      assertThat(up.frames("SETTINGS")).isEqualTo(1);
      assertThat(up.frames("PING")).isEqualTo(1);
      assertThat(up.frames("WINDOW_UPDATE")).isEqualTo(1);
      assertThat(up.reads()).isBetween(1L, 4L);

      // the other way has no preface: its first bytes are a frame header
      byte[] back = frame(1, 12);
      upstream.getOutputStream().write(back);
      assertThat(readN(worker.getInputStream(), back.length)).isEqualTo(back);
      Await.until("the frame back counted", () -> relay.runtimeToWorker().frames() == 1, WAIT);
      FrameRelay.Counts down = relay.runtimeToWorker();
      assertThat(down.frames("HEADERS")).isEqualTo(1);
      assertThat(down.perCall(1)).containsEntry("headers", 1.0).containsEntry("bytes", 21.0);
    }
  }

  private static byte[] frame(int type, int length) {
    byte[] f = new byte[9 + length];
    f[0] = (byte) (length >>> 16);
    f[1] = (byte) (length >>> 8);
    f[2] = (byte) length;
    f[3] = (byte) type;
    Arrays.fill(f, 9, f.length, (byte) 0x5a);
    return f;
  }

  private static byte[] readN(InputStream in, int n) throws Exception {
    byte[] b = new byte[n];
    int off = 0;
    while (off < n) {
      int k = in.read(b, off, n - off);
      assertThat(k).as("stream ended after %d of %d bytes", off, n).isPositive();
      off += k;
    }
    return b;
  }
}
