package dev.phrony.worker.work;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import dev.phrony.runtime.v1.WorkClientMsg;
import dev.phrony.runtime.v1.WorkHeartbeat;
import dev.phrony.runtime.v1.WorkToolError;
import dev.phrony.runtime.v1.WorkToolNack;
import dev.phrony.runtime.v1.WorkToolResult;
import io.grpc.Drainable;
import io.grpc.KnownLength;
import io.grpc.stub.ClientCallStreamObserver;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** Results written by hand are byte for byte what the generated code writes. */
class OutboundTest {
  private final Random random = new Random(20261202);

  @Test
  void a_result_is_encoded_exactly_as_the_generated_message() throws Exception {
    String[] ids = {"", "s:av:1:12", "é-ü-" + "x".repeat(200), "\u2603"};
    int[] sizes = {0, 1, 64, 127, 128, 16_383, 16_384, 70_000};
    for (String id : ids) {
      for (int size : sizes) {
        byte[] payload = new byte[size];
        random.nextBytes(payload);
        Outbound.Result r = new Outbound.Result(id, payload);
        WorkClientMsg generated =
            WorkClientMsg.newBuilder()
                .setResult(
                    WorkToolResult.newBuilder()
                        .setCallId(id)
                        .setPayload(ByteString.copyFrom(payload)))
                .build();

        assertThat(Outbound.encode(r))
            .as("%s, %d bytes", id, size)
            .isEqualTo(generated.toByteArray());
        assertThat(drained(Outbound.MARSHALLER.stream(r))).isEqualTo(generated.toByteArray());
        assertThat(Outbound.MARSHALLER.stream(r).readAllBytes()).isEqualTo(generated.toByteArray());
        assertThat(Outbound.MARSHALLER.parse(Outbound.MARSHALLER.stream(r)))
            .isEqualTo(new Outbound.Proto(generated));
      }
    }
  }

  @Test
  void gRPC_sizes_a_result_s_frame_from_its_stream_and_copies_it_once() throws Exception {
    InputStream s = Outbound.MARSHALLER.stream(new Outbound.Result("c-1", new byte[300]));
    int length =
        WorkClientMsg.newBuilder()
            .setResult(
                WorkToolResult.newBuilder()
                    .setCallId("c-1")
                    .setPayload(ByteString.copyFrom(new byte[300])))
            .build()
            .getSerializedSize();

    assertThat(s).isInstanceOf(KnownLength.class).isInstanceOf(Drainable.class);
    assertThat(s.available()).isEqualTo(length);
    assertThat(((Drainable) s).drainTo(new ByteArrayOutputStream())).isEqualTo(length);
    assertThat(s.available()).isZero();
    assertThat(s.read()).isEqualTo(-1);
  }

  @Test
  void every_other_message_is_written_by_the_generated_code() throws Exception {
    List<WorkClientMsg> others =
        List.of(
            WorkClientMsg.newBuilder().setHeartbeat(WorkHeartbeat.getDefaultInstance()).build(),
            WorkClientMsg.newBuilder()
                .setResult(
                    WorkToolResult.newBuilder()
                        .setCallId("c-2")
                        .setError(WorkToolError.newBuilder().setCode("X").setMessage("m")))
                .build(),
            WorkClientMsg.newBuilder()
                .setNack(WorkToolNack.newBuilder().setCallId("c-3").setCode("capacity_exhausted"))
                .build(),
            WorkClientMsg.getDefaultInstance());
    for (WorkClientMsg m : others) {
      assertThat(Outbound.MARSHALLER.stream(new Outbound.Proto(m)).readAllBytes())
          .isEqualTo(m.toByteArray());
    }
  }

  @Test
  void the_call_id_of_results_and_nacks_only() {
    assertThat(Outbound.resultOrNackCallId(new Outbound.Result("a", new byte[0]))).isEqualTo("a");
    assertThat(
            Outbound.resultOrNackCallId(
                new Outbound.Proto(
                    WorkClientMsg.newBuilder()
                        .setResult(WorkToolResult.newBuilder().setCallId("b"))
                        .build())))
        .isEqualTo("b");
    assertThat(
            Outbound.resultOrNackCallId(
                new Outbound.Proto(
                    WorkClientMsg.newBuilder()
                        .setNack(WorkToolNack.newBuilder().setCallId("c"))
                        .build())))
        .isEqualTo("c");
    assertThat(
            Outbound.resultOrNackCallId(
                new Outbound.Proto(
                    WorkClientMsg.newBuilder()
                        .setHeartbeat(WorkHeartbeat.getDefaultInstance())
                        .build())))
        .isNull();
  }

  @Test
  void a_cancel_takes_back_a_queued_result_of_its_call_and_nothing_else() {
    Held out = new Held();
    StreamWriter writer =
        new StreamWriter(out, Runnable::run, new WireTimings(), new StreamCancels());
    writer.send(new Outbound.Result("s:1:1", new byte[] {'1'}));
    writer.send(new Outbound.Result("s:1:12", new byte[] {'2'}));
    writer.send(
        new Outbound.Proto(
            WorkClientMsg.newBuilder()
                .setNack(WorkToolNack.newBuilder().setCallId("s:1:3"))
                .build()));

    assertThat(writer.unsend("s:1:1")).isTrue();
    assertThat(writer.unsend("s:1:3")).isTrue();
    assertThat(writer.unsend("s:1:1")).isFalse();
    out.ready = true;
    writer.drain();

    assertThat(out.written).map(Outbound::resultOrNackCallId).containsExactly("s:1:12");
  }

  private static byte[] drained(InputStream s) throws Exception {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ((Drainable) s).drainTo(out);
    return out.toByteArray();
  }

  /** A request stream that is not ready until the test says so, and keeps what is written. */
  private static final class Held extends ClientCallStreamObserver<Outbound> {
    boolean ready;
    final List<Outbound> written = new ArrayList<>();

    @Override
    public boolean isReady() {
      return ready;
    }

    @Override
    public void onNext(Outbound value) {
      written.add(value);
    }

    @Override
    public void onError(Throwable t) {}

    @Override
    public void onCompleted() {}

    @Override
    public void cancel(String message, Throwable cause) {}

    @Override
    public void setOnReadyHandler(Runnable onReadyHandler) {}

    @Override
    public void request(int count) {}

    @Override
    public void setMessageCompression(boolean enable) {}

    @Override
    public void disableAutoInboundFlowControl() {}
  }
}
