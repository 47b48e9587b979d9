package dev.phrony.worker.work;

import com.google.protobuf.CodedOutputStream;
import dev.phrony.runtime.v1.RuntimeGrpc;
import dev.phrony.runtime.v1.WorkClientMsg;
import io.grpc.Drainable;
import io.grpc.KnownLength;
import io.grpc.MethodDescriptor;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;

/**
 * A message to the runtime on the Work stream, as the worker writes it. A result with a payload,
 * the one message every call sends, is encoded by {@link #MARSHALLER} straight from its call id and
 * bytes into one exact array, which gRPC copies into its frame: no builders, no message objects, no
 * encoder and its buffer (together ~2.5% of the I/O thread's time at c=64). Everything else is the
 * generated message, written by the generated stub's marshaller.
 */
sealed interface Outbound {

  /** {@code WorkClientMsg{result: WorkToolResult{call_id, payload}}}. */
  record Result(String callId, byte[] payload) implements Outbound {}

  /** Any other message, as generated. */
  record Proto(WorkClientMsg msg) implements Outbound {}

  /** The call id of a result or nack (what a cancel takes back), else null. */
  static String resultOrNackCallId(Outbound m) {
    return switch (m) {
      case Result r -> r.callId();
      case Proto p when p.msg().hasResult() -> p.msg().getResult().getCallId();
      case Proto p when p.msg().hasNack() -> p.msg().getNack().getCallId();
      case Proto p -> null;
    };
  }

  /** Writes {@code WorkClientMsg}; {@code parse} (never used by the client) for tests. */
  MethodDescriptor.Marshaller<Outbound> MARSHALLER =
      new MethodDescriptor.Marshaller<>() {
        @Override
        public InputStream stream(Outbound value) {
          return switch (value) {
            case Result r -> new Encoded(encode(r));
            case Proto p -> GENERATED.stream(p.msg());
          };
        }

        @Override
        public Outbound parse(InputStream stream) {
          return new Proto(GENERATED.parse(stream));
        }
      };

  /** The generated stub's own marshaller, for every message but a result with a payload. */
  MethodDescriptor.Marshaller<WorkClientMsg> GENERATED =
      RuntimeGrpc.getWorkMethod().getRequestMarshaller();

  /**
   * Field 3 (result) of {@code WorkClientMsg} holding fields 1 (call_id) and 2 (payload) of {@code
   * WorkToolResult}, byte for byte as the generated code writes them (fields in order; proto3
   * leaves an empty one out).
   */
  static byte[] encode(Result r) {
    byte[] callId = r.callId().getBytes(StandardCharsets.UTF_8);
    byte[] payload = r.payload();
    int body = fieldSize(callId.length) + fieldSize(payload.length);
    byte[] out = new byte[1 + CodedOutputStream.computeUInt32SizeNoTag(body) + body];
    int at = varint(out, 0, 3 << 3 | 2);
    at = varint(out, at, body);
    at = field(out, at, 1, callId);
    at = field(out, at, 2, payload);
    assert at == out.length;
    return out;
  }

  private static int fieldSize(int length) {
    return length == 0 ? 0 : 1 + CodedOutputStream.computeUInt32SizeNoTag(length) + length;
  }

  private static int field(byte[] out, int at, int number, byte[] value) {
    if (value.length == 0) {
      return at;
    }
    at = varint(out, at, number << 3 | 2);
    at = varint(out, at, value.length);
    System.arraycopy(value, 0, out, at, value.length);
    return at + value.length;
  }

  private static int varint(byte[] out, int at, int value) {
    while ((value & ~0x7F) != 0) {
      out[at++] = (byte) (value & 0x7F | 0x80);
      value >>>= 7;
    }
    out[at++] = (byte) value;
    return at;
  }

  /**
   * One encoded message: gRPC sizes its frame by {@link KnownLength} and copies it once into the
   * frame by {@link Drainable}.
   */
  final class Encoded extends InputStream implements KnownLength, Drainable {
    private final byte[] bytes;
    private int at;

    Encoded(byte[] bytes) {
      this.bytes = bytes;
    }

    @Override
    public int drainTo(OutputStream target) throws IOException {
      int n = bytes.length - at;
      target.write(bytes, at, n);
      at = bytes.length;
      return n;
    }

    @Override
    public int available() {
      return bytes.length - at;
    }

    @Override
    public int read() {
      return at < bytes.length ? bytes[at++] & 0xFF : -1;
    }

    @Override
    public int read(byte[] b, int off, int len) {
      if (len == 0) {
        return 0;
      }
      if (at >= bytes.length) {
        return -1;
      }
      int n = Math.min(len, bytes.length - at);
      System.arraycopy(bytes, at, b, off, n);
      at += n;
      return n;
    }
  }
}
