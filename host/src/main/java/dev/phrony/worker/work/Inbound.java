package dev.phrony.worker.work;

import com.google.protobuf.ByteString;
import com.google.protobuf.CodedInputStream;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.UnsafeByteOperations;
import dev.phrony.runtime.v1.RuntimeGrpc;
import dev.phrony.runtime.v1.WorkInvoke;
import dev.phrony.runtime.v1.WorkResultAck;
import dev.phrony.runtime.v1.WorkServerMsg;
import io.grpc.KnownLength;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.util.Arrays;

/**
 * A message from the runtime on the Work stream, as the worker reads it. Invokes and result acks,
 * two of each call's inbound messages, are read off the wire straight into records by {@link
 * #MARSHALLER}: no builders, and the arguments alias the message's bytes. Every other message, and
 * any invoke or ack not encoded the plain way (a repeated body, a field of another wire type,
 * trailing data), is read by the generated parser, so what is accepted, and as what, is always the
 * generated code's; the records only save its copies.
 */
sealed interface Inbound {

  /** {@code WorkInvoke}, field for field (protocol.md: field numbers are law). */
  record Invoke(
      String callId,
      String sessionId,
      String agentVersionId,
      int turn,
      String tool,
      String version,
      ByteString args,
      String sideEffectClass,
      long deadlineUnixMs)
      implements Inbound {

    /** The same invoke from the generated message. */
    static Invoke of(WorkInvoke i) {
      return new Invoke(
          i.getCallId(),
          i.getSessionId(),
          i.getAgentVersionId(),
          i.getTurn(),
          i.getTool(),
          i.getVersion(),
          i.getArgs(),
          i.getSideEffectClass(),
          i.getDeadlineUnixMs());
    }

    /** The arguments as a read-only view (not copied). */
    ByteBuffer argsBuffer() {
      return args.asReadOnlyByteBuffer();
    }

    WorkInvoke toProto() {
      return WorkInvoke.newBuilder()
          .setCallId(callId)
          .setSessionId(sessionId)
          .setAgentVersionId(agentVersionId)
          .setTurn(turn)
          .setTool(tool)
          .setVersion(version)
          .setArgs(args)
          .setSideEffectClass(sideEffectClass)
          .setDeadlineUnixMs(deadlineUnixMs)
          .build();
    }
  }

  /** {@code WorkResultAck}. */
  record ResultAck(String callId) implements Inbound {}

  /** Any other message (registered, cancel, heartbeat_ack, or none), as generated. */
  record Other(WorkServerMsg msg) implements Inbound {}

  /** What {@code msg} is read as. */
  static Inbound of(WorkServerMsg msg) {
    return switch (msg.getBodyCase()) {
      case INVOKE -> Invoke.of(msg.getInvoke());
      case RESULT_ACK -> new ResultAck(msg.getResultAck().getCallId());
      default -> new Other(msg);
    };
  }

  /** The message it was read from, as the generated code would have read it. */
  static WorkServerMsg toProto(Inbound m) {
    return switch (m) {
      case Invoke i -> WorkServerMsg.newBuilder().setInvoke(i.toProto()).build();
      case ResultAck a ->
          WorkServerMsg.newBuilder()
              .setResultAck(WorkResultAck.newBuilder().setCallId(a.callId()))
              .build();
      case Other o -> o.msg();
    };
  }

  /**
   * Reads {@code WorkServerMsg} as an {@link Inbound}; each marshaller keeps its own {@linkplain
   * Plain last strings seen}, so two workers in one JVM share no state.
   */
  static MethodDescriptor.Marshaller<Inbound> marshaller() {
    Plain plain = new Plain();
    return new MethodDescriptor.Marshaller<>() {
      @Override
      public InputStream stream(Inbound value) { // the client never sends one; for tests
        return toProto(value).toByteString().newInput();
      }

      @Override
      public Inbound parse(InputStream stream) {
        try {
          byte[] bytes = bytesOf(stream);
          Inbound read = plain.read(bytes);
          return read != null ? read : of(WorkServerMsg.parseFrom(bytes));
        } catch (IOException e) {
          // As gRPC's own protobuf marshaller reports a message that does not parse.
          throw Status.INTERNAL
              .withDescription("Invalid protobuf byte sequence")
              .withCause(e)
              .asRuntimeException();
        }
      }
    };
  }

  /** All of {@code stream}: gRPC's message streams know their length, so one exact array. */
  private static byte[] bytesOf(InputStream stream) throws IOException {
    if (!(stream instanceof KnownLength)) {
      return stream.readAllBytes();
    }
    byte[] head = new byte[stream.available()];
    int got = stream.readNBytes(head, 0, head.length);
    if (got < head.length) { // it had less than it said
      return Arrays.copyOf(head, got);
    }
    int next = stream.read();
    if (next < 0) {
      return head;
    }
    ByteArrayOutputStream all = new ByteArrayOutputStream(); // it knew less than it had
    all.write(head);
    all.write(next);
    stream.transferTo(all);
    return all.toByteArray();
  }

  /** {@code Runtime.Work} with a {@link #marshaller} of its own for what the runtime sends. */
  static MethodDescriptor<Outbound, Inbound> workMethod() {
    return RuntimeGrpc.getWorkMethod().toBuilder(Outbound.MARSHALLER, marshaller()).build();
  }

  /** The plain encodings of an invoke and an ack, read by hand. */
  final class Plain {
    private static final int INVOKE = 2 << 3 | 2;
    private static final int RESULT_ACK = 4 << 3 | 2;

    /** By field; written by whichever thread reads (records: a racing reader sees a whole one). */
    private final Seen[] seen = new Seen[4];

    /**
     * The invoke or ack {@code bytes} hold as their one field, or null for anything else (including
     * what does not parse: the generated parser then says why).
     */
    Inbound read(byte[] bytes) {
      CodedInputStream in = CodedInputStream.newInstance(bytes);
      in.enableAliasing(true); // the array is this message's own: args may point into it
      try {
        int tag = in.readTag();
        if (tag != INVOKE && tag != RESULT_ACK) {
          return null;
        }
        int limit = in.pushLimit(in.readRawVarint32());
        Inbound m = tag == INVOKE ? invoke(in, bytes) : ack(in);
        if (m == null || !in.isAtEnd()) {
          return null;
        }
        in.popLimit(limit);
        return in.isAtEnd() ? m : null; // more after the body: merging rules, left to protobuf
      } catch (IOException e) { // an array only fails to parse
        return null;
      }
    }

    private Invoke invoke(CodedInputStream in, byte[] bytes) throws IOException {
      String callId = "";
      String sessionId = "";
      String agentVersionId = "";
      int turn = 0;
      String tool = "";
      String version = "";
      ByteString args = ByteString.EMPTY;
      String sideEffectClass = "";
      long deadline = 0;
      for (int tag = in.readTag(); tag != 0; tag = in.readTag()) {
        switch (tag) {
          case 1 << 3 | 2 -> callId = in.readStringRequireUtf8();
          case 2 << 3 | 2 -> sessionId = in.readStringRequireUtf8();
          case 3 << 3 | 2 -> agentVersionId = repeated(in, bytes, AGENT_VERSION);
          case 4 << 3 -> turn = in.readInt32();
          case 5 << 3 | 2 -> tool = repeated(in, bytes, TOOL);
          case 6 << 3 | 2 -> version = repeated(in, bytes, VERSION);
          case 7 << 3 | 2 -> args = in.readBytes();
          case 8 << 3 | 2 -> sideEffectClass = repeated(in, bytes, SIDE_EFFECT_CLASS);
          case 9 << 3 -> deadline = in.readInt64();
          default -> {
            return null; // an unknown field or wire type: the generated parser's case
          }
        }
      }
      return new Invoke(
          callId, sessionId, agentVersionId, turn, tool, version, args, sideEffectClass, deadline);
    }

    /**
     * A string field whose value mostly repeats from one invoke to the next (tool, version, side
     * effect class, agent version): the last value of each is kept, and bytes equal to it give its
     * string again instead of a new one decoded.
     */
    private record Seen(byte[] utf8, String text) {}

    private static final int AGENT_VERSION = 0;
    private static final int TOOL = 1;
    private static final int VERSION = 2;
    private static final int SIDE_EFFECT_CLASS = 3;

    private String repeated(CodedInputStream in, byte[] bytes, int field) throws IOException {
      int length = in.readRawVarint32();
      if (length < 0 || length > in.getBytesUntilLimit()) {
        throw new InvalidProtocolBufferException("truncated string field");
      }
      int at = in.getTotalBytesRead(); // the reader started at 0 of bytes
      Seen last = seen[field];
      if (last != null
          && Arrays.equals(bytes, at, at + length, last.utf8(), 0, last.utf8().length)) {
        in.skipRawBytes(length);
        return last.text();
      }
      byte[] utf8 = in.readRawBytes(length);
      ByteString value = UnsafeByteOperations.unsafeWrap(utf8);
      if (!value.isValidUtf8()) { // as readStringRequireUtf8 refuses it
        throw new InvalidProtocolBufferException("string field is not valid UTF-8");
      }
      String text = value.toStringUtf8();
      seen[field] = new Seen(utf8, text);
      return text;
    }

    private static ResultAck ack(CodedInputStream in) throws IOException {
      String callId = "";
      for (int tag = in.readTag(); tag != 0; tag = in.readTag()) {
        if (tag != (1 << 3 | 2)) {
          return null;
        }
        callId = in.readStringRequireUtf8();
      }
      return new ResultAck(callId);
    }
  }
}
