package dev.phrony.runtime.v1;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * Encodes messages with the generated code and compares them with encodings built by hand from
 * protocol.md part 1, so a renumbered or retyped field fails here instead of on the wire.
 */
class WireCompatibilityTest {

  private static final int VARINT = 0;
  private static final int LEN = 2;

  @Test
  void register_envelope_and_fields() {
    var msg =
        WorkClientMsg.newBuilder()
            .setRegister(
                WorkRegister.newBuilder()
                    .setWorkerId("w1")
                    .setWorkloadIdentity("id")
                    .setImageDigest("sha256:ab")
                    .addHandlers(
                        WorkHandlerAdvertisement.newBuilder()
                            .setTool("echo")
                            .setVersion("default")
                            .setContractVersion("1")
                            .setMaxConcurrency(300)
                            .setDescriptorHash("h"))
                    .addInFlight(WorkInFlightCall.newBuilder().setCallId("c1")))
            .build();

    byte[] handler =
        new Wire()
            .string(1, "echo")
            .string(2, "default")
            .string(3, "1")
            .varint(4, 300)
            .string(5, "h")
            .bytes();
    byte[] inFlight = new Wire().string(1, "c1").bytes();
    byte[] register =
        new Wire()
            .string(1, "w1")
            .string(2, "id")
            .string(3, "sha256:ab")
            .message(4, handler)
            .message(5, inFlight)
            .bytes();
    byte[] expected = new Wire().message(1, register).bytes();

    assertThat(msg.toByteArray()).isEqualTo(expected);
  }

  @Test
  void client_heartbeat_result_and_nack_use_their_oneof_numbers() {
    assertThat(
            WorkClientMsg.newBuilder()
                .setHeartbeat(WorkHeartbeat.getDefaultInstance())
                .build()
                .toByteArray())
        .isEqualTo(new Wire().message(2, new byte[0]).bytes());

    var result =
        WorkClientMsg.newBuilder()
            .setResult(
                WorkToolResult.newBuilder()
                    .setCallId("c")
                    .setPayload(ByteString.copyFromUtf8("{}"))
                    .setError(WorkToolError.newBuilder().setCode("x").setMessage("m")))
            .build();
    byte[] error = new Wire().string(1, "x").string(2, "m").bytes();
    assertThat(result.toByteArray())
        .isEqualTo(
            new Wire()
                .message(3, new Wire().string(1, "c").string(2, "{}").message(3, error).bytes())
                .bytes());

    var nack =
        WorkClientMsg.newBuilder()
            .setNack(WorkToolNack.newBuilder().setCallId("c").setCode("draining").setMessage("bye"))
            .build();
    assertThat(nack.toByteArray())
        .isEqualTo(
            new Wire()
                .message(
                    4, new Wire().string(1, "c").string(2, "draining").string(3, "bye").bytes())
                .bytes());
  }

  @Test
  void server_messages_decode_from_hand_built_bytes() throws Exception {
    byte[] invoke =
        new Wire()
            .string(1, "s:a:3:0")
            .string(2, "s")
            .string(3, "a")
            .varint(4, 3)
            .string(5, "weather.get-forecast")
            .string(6, "1.0.0")
            .string(7, "{\"city\":\"Oslo\"}")
            .string(8, "read_only")
            .varint(9, 1_700_000_000_000L)
            .bytes();
    var parsed = WorkServerMsg.parseFrom(new Wire().message(2, invoke).bytes());
    assertThat(parsed.getBodyCase()).isEqualTo(WorkServerMsg.BodyCase.INVOKE);
    var inv = parsed.getInvoke();
    assertThat(inv.getCallId()).isEqualTo("s:a:3:0");
    assertThat(inv.getSessionId()).isEqualTo("s");
    assertThat(inv.getAgentVersionId()).isEqualTo("a");
    assertThat(inv.getTurn()).isEqualTo(3);
    assertThat(inv.getTool()).isEqualTo("weather.get-forecast");
    assertThat(inv.getVersion()).isEqualTo("1.0.0");
    assertThat(inv.getArgs().toStringUtf8()).isEqualTo("{\"city\":\"Oslo\"}");
    assertThat(inv.getSideEffectClass()).isEqualTo("read_only");
    assertThat(inv.getDeadlineUnixMs()).isEqualTo(1_700_000_000_000L);

    var registered =
        WorkServerMsg.parseFrom(
            new Wire().message(1, new Wire().string(1, "w1").varint(2, 30_000).bytes()).bytes());
    assertThat(registered.getRegistered().getWorkerId()).isEqualTo("w1");
    assertThat(registered.getRegistered().getLeaseTtlMs()).isEqualTo(30_000);

    assertThat(
            WorkServerMsg.parseFrom(
                    new Wire().message(3, new Wire().string(1, "c").bytes()).bytes())
                .getCancel()
                .getCallId())
        .isEqualTo("c");
    assertThat(
            WorkServerMsg.parseFrom(
                    new Wire().message(4, new Wire().string(1, "c").bytes()).bytes())
                .getResultAck()
                .getCallId())
        .isEqualTo("c");
    assertThat(WorkServerMsg.parseFrom(new Wire().message(5, new byte[0]).bytes()).getBodyCase())
        .isEqualTo(WorkServerMsg.BodyCase.HEARTBEAT_ACK);
  }

  @Test
  void get_version_and_method_names() {
    assertThat(
            GetVersionResponse.newBuilder()
                .setVersion("0.2.1")
                .setSchemaVersion("7")
                .build()
                .toByteArray())
        .isEqualTo(new Wire().string(1, "0.2.1").string(2, "7").bytes());
    assertThat(RuntimeGrpc.getWorkMethod().getFullMethodName())
        .isEqualTo("phrony.runtime.v1.Runtime/Work");
    assertThat(RuntimeGrpc.getGetVersionMethod().getFullMethodName())
        .isEqualTo("phrony.runtime.v1.Runtime/GetVersion");
  }

  @Test
  void session_stream_messages() {
    var start =
        RunSessionInteractiveClientMsg.newBuilder()
            .setStart(
                RunSessionInteractiveStart.newBuilder()
                    .setAgentRef(AgentRef.newBuilder().setNamespace("demo").setName("pay"))
                    .setSessionId("s1"))
            .build();
    byte[] ref = new Wire().string(1, "demo").string(2, "pay").bytes();
    assertThat(start.toByteArray())
        .isEqualTo(
            new Wire().message(1, new Wire().message(1, ref).string(3, "s1").bytes()).bytes());

    var approval =
        RunSessionInteractiveClientMsg.newBuilder()
            .setToolApproval(
                RunSessionInteractiveToolApproval.newBuilder()
                    .setApprovalId("a1")
                    .setApproved(true)
                    .setComment("ok"))
            .build();
    assertThat(approval.toByteArray())
        .isEqualTo(
            new Wire()
                .message(3, new Wire().string(1, "a1").varint(2, 1).string(3, "ok").bytes())
                .bytes());

    var required =
        RunSessionInteractiveServerMsg.newBuilder()
            .setApprovalRequired(
                RunSessionInteractiveApprovalRequired.newBuilder()
                    .setApprovalId("a1")
                    .setCallId("c1")
                    .setReason("r")
                    .setApprovalsRequired(2)
                    .setExpiresAt("t"))
            .build();
    assertThat(required.toByteArray())
        .isEqualTo(
            new Wire()
                .message(
                    8,
                    new Wire()
                        .string(1, "a1")
                        .string(2, "c1")
                        .string(7, "r")
                        .varint(11, 2)
                        .string(14, "t")
                        .bytes())
                .bytes());
    var cancelled =
        RunSessionInteractiveServerMsg.newBuilder()
            .setCancelled(RunSessionInteractiveCancelled.newBuilder().setSessionEndedAtUnixMs(5))
            .build();
    assertThat(cancelled.toByteArray())
        .isEqualTo(new Wire().message(9, new Wire().varint(1, 5).bytes()).bytes());
    var result =
        RunSessionInteractiveServerMsg.newBuilder()
            .setToolResult(
                RunSessionInteractiveToolResult.newBuilder().setCallId("c").setErrorMessage("e"))
            .build();
    assertThat(result.toByteArray())
        .isEqualTo(new Wire().message(7, new Wire().string(1, "c").string(3, "e").bytes()).bytes());
  }

  @Test
  void approval_rpcs() {
    var decide =
        DecideApprovalRequest.newBuilder()
            .setApprovalId("a1")
            .setDecision(ApprovalDecision.APPROVAL_DECISION_REJECT)
            .setComment("no")
            .setActor("me")
            .build();
    assertThat(decide.toByteArray())
        .isEqualTo(new Wire().string(1, "a1").varint(2, 2).string(3, "no").string(6, "me").bytes());
    var row =
        Approval.newBuilder()
            .setId("a1")
            .setStatus("pending")
            .setApprovalsRequired(1)
            .setOnReject("fail")
            .addVotes(ApprovalVote.newBuilder().setDecision("approved"))
            .build();
    assertThat(row.toByteArray())
        .isEqualTo(
            new Wire()
                .string(1, "a1")
                .string(4, "pending")
                .varint(13, 1)
                .string(16, "fail")
                .message(23, new Wire().string(2, "approved").bytes())
                .bytes());
    assertThat(RuntimeGrpc.getRunSessionInteractiveMethod().getFullMethodName())
        .isEqualTo("phrony.runtime.v1.Runtime/RunSessionInteractive");
    assertThat(RuntimeGrpc.getDecideApprovalMethod().getFullMethodName())
        .isEqualTo("phrony.runtime.v1.Runtime/DecideApproval");
  }

  /** A minimal protobuf encoder written from the wire-format spec, independent of protobuf-java. */
  private static final class Wire {
    private final ByteArrayOutputStream out = new ByteArrayOutputStream();

    Wire varint(int field, long value) {
      tag(field, VARINT);
      raw(value);
      return this;
    }

    Wire string(int field, String value) {
      return message(field, value.getBytes(StandardCharsets.UTF_8));
    }

    Wire message(int field, byte[] value) {
      tag(field, LEN);
      raw(value.length);
      out.writeBytes(value);
      return this;
    }

    byte[] bytes() {
      return out.toByteArray();
    }

    private void tag(int field, int wireType) {
      raw(((long) field << 3) | wireType);
    }

    private void raw(long v) {
      while ((v & ~0x7FL) != 0) {
        out.write((int) ((v & 0x7F) | 0x80));
        v >>>= 7;
      }
      out.write((int) v);
    }
  }
}
