package dev.phrony.worker.work;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.ByteString;
import com.google.protobuf.UnknownFieldSet;
import dev.phrony.runtime.v1.WorkHeartbeatAck;
import dev.phrony.runtime.v1.WorkInvoke;
import dev.phrony.runtime.v1.WorkRegistered;
import dev.phrony.runtime.v1.WorkResultAck;
import dev.phrony.runtime.v1.WorkServerMsg;
import dev.phrony.runtime.v1.WorkToolCancel;
import io.grpc.KnownLength;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The hand reader of invokes and acks reads exactly what the generated parser reads. */
class InboundTest {
  private final Random random = new Random(20261202);

  @Test
  void invokes_and_acks_read_by_hand_equal_the_generated_parse() throws Exception {
    for (int i = 0; i < 2_000; i++) {
      WorkServerMsg msg =
          i % 3 == 0
              ? WorkServerMsg.newBuilder()
                  .setResultAck(WorkResultAck.newBuilder().setCallId(text()))
                  .build()
              : WorkServerMsg.newBuilder().setInvoke(randomInvoke()).build();
      byte[] bytes = msg.toByteArray();
      Inbound expected = Inbound.of(WorkServerMsg.parseFrom(bytes));
      assertThat(new Inbound.Plain().read(bytes)).as("read by hand: %s", msg).isEqualTo(expected);
      assertThat(parse(bytes, true)).isEqualTo(expected);
      assertThat(parse(bytes, false)).isEqualTo(expected);
      assertThat(Inbound.toProto(expected)).isEqualTo(msg);
    }
  }

  @Test
  void values_that_repeat_from_invoke_to_invoke_are_read_as_themselves() throws Exception {
    // The reader keeps the last tool, version, side effect class and agent version: runs of the
    // same value, prefixes, same-length neighbours and back again.
    String[] tools = {"echo", "echo", "echp", "echo2", "ech", "", "echo", "表", "表", "é"};
    for (int i = 0; i < tools.length; i++) {
      WorkInvoke invoke =
          WorkInvoke.newBuilder()
              .setCallId("c" + i)
              .setTool(tools[i])
              .setVersion(i % 2 == 0 ? "1.0.0" : "1.0.1")
              .setSideEffectClass("read_only")
              .setAgentVersionId(i < 5 ? "av" : "av2")
              .setArgs(ByteString.copyFromUtf8("{}"))
              .build();
      byte[] bytes = WorkServerMsg.newBuilder().setInvoke(invoke).build().toByteArray();
      assertThat(new Inbound.Plain().read(bytes)).isEqualTo(Inbound.Invoke.of(invoke));
    }
    // Bytes that are not UTF-8 where a known value was: refused, as the generated parser does.
    byte[] badTool = concat(new byte[] {0x12, 0x03, 0x2a, 0x01, (byte) 0xc3});
    assertThat(new Inbound.Plain().read(badTool)).isNull();
    assertThatThrownBy(() -> parse(badTool, true)).isInstanceOf(StatusRuntimeException.class);
  }

  @Test
  void other_messages_are_the_generated_ones() throws Exception {
    for (WorkServerMsg msg :
        new WorkServerMsg[] {
          WorkServerMsg.getDefaultInstance(),
          WorkServerMsg.newBuilder()
              .setRegistered(WorkRegistered.newBuilder().setLeaseTtlMs(30_000))
              .build(),
          WorkServerMsg.newBuilder().setCancel(WorkToolCancel.newBuilder().setCallId("c1")).build(),
          WorkServerMsg.newBuilder().setHeartbeatAck(WorkHeartbeatAck.getDefaultInstance()).build()
        }) {
      assertThat(new Inbound.Plain().read(msg.toByteArray())).isNull();
      assertThat(parse(msg.toByteArray(), true)).isEqualTo(new Inbound.Other(msg));
    }
  }

  @Test
  void encodings_other_than_the_plain_one_are_left_to_the_generated_parser() throws Exception {
    WorkInvoke invoke = randomInvoke();
    byte[] one = WorkServerMsg.newBuilder().setInvoke(invoke).build().toByteArray();
    byte[] other = WorkServerMsg.newBuilder().setInvoke(randomInvoke()).build().toByteArray();
    byte[] ack =
        WorkServerMsg.newBuilder()
            .setResultAck(WorkResultAck.newBuilder().setCallId("a"))
            .build()
            .toByteArray();
    byte[][] odd = {
      // an unknown field inside the invoke
      WorkServerMsg.newBuilder()
          .setInvoke(
              invoke.toBuilder()
                  .setUnknownFields(
                      UnknownFieldSet.newBuilder()
                          .addField(99, UnknownFieldSet.Field.newBuilder().addVarint(5).build())
                          .build()))
          .build()
          .toByteArray(),
      concat(one, other), // the same body twice: protobuf merges the two
      concat(one, ack), // two bodies: the last one wins
      concat(ack, one),
      // call_id (field 1) sent as a varint: an unknown field to the generated parser
      concat(new byte[] {0x12, 0x02, 0x08, 0x07}),
      // an unknown top-level field after the invoke
      concat(one, new byte[] {(byte) 0xa0, 0x06, 0x01}),
    };
    for (byte[] bytes : odd) {
      assertThat(new Inbound.Plain().read(bytes)).isNull();
      assertThat(parse(bytes, true)).isEqualTo(Inbound.of(WorkServerMsg.parseFrom(bytes)));
    }
  }

  @Test
  void what_does_not_parse_fails_the_stream_as_grpc_s_marshaller_does() {
    byte[] badUtf8 = concat(new byte[] {0x12, 0x03, 0x0a, 0x01, (byte) 0xff});
    byte[] truncated = concat(new byte[] {0x12, 0x09, 0x0a, 0x01, 'c'});
    for (byte[] bytes : new byte[][] {badUtf8, truncated}) {
      assertThatThrownBy(() -> parse(bytes, true))
          .isInstanceOfSatisfying(
              StatusRuntimeException.class,
              e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.INTERNAL));
    }
  }

  @Test
  void a_stream_that_knew_less_than_it_had_is_read_whole() {
    byte[] bytes = WorkServerMsg.newBuilder().setInvoke(randomInvoke()).build().toByteArray();
    InputStream underCounting =
        new KnownLengthStream(bytes) {
          @Override
          public int available() {
            return Math.min(3, super.available());
          }
        };
    assertThat(Inbound.marshaller().parse(underCounting))
        .isEqualTo(new Inbound.Plain().read(bytes));
  }

  private WorkInvoke randomInvoke() {
    WorkInvoke.Builder b = WorkInvoke.newBuilder();
    // Each field set or left at its default, so absent fields are read as absent.
    if (random.nextInt(8) > 0) {
      b.setCallId(text());
    }
    if (random.nextBoolean()) {
      b.setSessionId(text());
    }
    if (random.nextBoolean()) {
      b.setAgentVersionId(text());
    }
    if (random.nextBoolean()) {
      b.setTurn(random.nextInt(4) == 0 ? random.nextInt() : random.nextInt(20));
    }
    if (random.nextBoolean()) {
      b.setTool(text());
    }
    if (random.nextBoolean()) {
      b.setVersion(text());
    }
    if (random.nextBoolean()) {
      byte[] args = new byte[random.nextInt(300)];
      random.nextBytes(args);
      b.setArgs(ByteString.copyFrom(args));
    }
    if (random.nextBoolean()) {
      b.setSideEffectClass(text());
    }
    if (random.nextBoolean()) {
      b.setDeadlineUnixMs(random.nextInt(4) == 0 ? random.nextLong() : 1_800_000_000_000L);
    }
    return b.build();
  }

  /** ASCII, accented, CJK and astral characters, or nothing. */
  private String text() {
    int n = random.nextInt(40);
    StringBuilder s = new StringBuilder();
    for (int i = 0; i < n; i++) {
      switch (random.nextInt(5)) {
        case 0 -> s.append('é');
        case 1 -> s.append('表');
        case 2 -> s.appendCodePoint(0x1F600 + random.nextInt(50));
        default -> s.append((char) ('!' + random.nextInt(90)));
      }
    }
    return s.toString();
  }

  private static Inbound parse(byte[] bytes, boolean knownLength) {
    return Inbound.marshaller()
        .parse(knownLength ? new KnownLengthStream(bytes) : new ByteArrayInputStream(bytes));
  }

  private static byte[] concat(byte[]... parts) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (byte[] p : parts) {
      out.writeBytes(p);
    }
    return out.toByteArray();
  }

  /** A stream that says its length, as gRPC's message streams do. */
  private static class KnownLengthStream extends ByteArrayInputStream implements KnownLength {
    KnownLengthStream(byte[] bytes) {
      super(bytes);
    }
  }
}
