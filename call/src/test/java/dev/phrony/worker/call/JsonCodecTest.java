package dev.phrony.worker.call;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.phrony.worker.api.ToolException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Arguments are checked and decoded as they arrived, with the verdicts of the byte[] check. */
class JsonCodecTest {
  private final JsonCodec codec = new JsonCodec();

  record Doc(String name, List<Integer> values) {}

  private static ByteBuffer utf8(String s) {
    return ByteBuffer.wrap(s.getBytes(StandardCharsets.UTF_8)).asReadOnlyBuffer();
  }

  /** A valid document of about {@code bytes} bytes: larger than the scan vouches for when big. */
  private static String document(int bytes) {
    StringBuilder b = new StringBuilder("{\"name\":\"n\",\"values\":[0");
    while (b.length() < bytes) {
      b.append(",1234567");
    }
    return b.append("]}").toString();
  }

  @Test
  void arguments_small_and_beyond_the_scan_get_the_same_verdict_as_bytes() {
    String big = document(JsonScan.MAX_BYTES + 1_000);
    for (String s :
        List.of(
            "{}",
            "{\"a\":1}",
            "{",
            "{}{}",
            big,
            big + " ",
            big + "x",
            big.substring(0, big.length() - 1),
            "[" + big + "," + big + "]")) {
      ByteBuffer args = utf8(s);
      assertThat(codec.isJson(args))
          .as("%d bytes ending %s", s.length(), s.substring(Math.max(0, s.length() - 8)))
          .isEqualTo(codec.isJson(JsonCodec.copy(args)));
    }
    assertThat(codec.isJson(utf8(big))).isTrue();
    assertThat(codec.isJson(utf8(big + "x"))).isFalse();
  }

  @Test
  void arguments_decode_from_the_payload_and_misfits_are_invalid_args() {
    Doc d = codec.decodeArgs(utf8(document(JsonScan.MAX_BYTES * 2)), Doc.class);
    assertThat(d.name()).isEqualTo("n");
    assertThat(d.values()).hasSizeGreaterThan(10_000);

    assertThatThrownBy(() -> codec.decodeArgs(utf8("{\"values\":\"x\"}"), Doc.class))
        .isInstanceOfSatisfying(
            ToolException.class, e -> assertThat(e.code()).isEqualTo(ToolException.INVALID_ARGS))
        .hasMessage("/values: expected array");
  }

  @Test
  void misfits_are_told_in_json_words_at_a_pointer_never_with_java_class_names() {
    record Inner(int n) {}
    record Outer(String city, Inner inner, java.util.List<Inner> list) {}
    assertThatThrownBy(() -> codec.decodeArgs(utf8("[1]"), Outer.class))
        .hasMessage("/: expected object");
    assertThatThrownBy(() -> codec.decodeArgs(utf8("{\"inner\":{\"n\":\"x\"}}"), Outer.class))
        .hasMessage("/inner/n: expected integer");
    assertThatThrownBy(
            () -> codec.decodeArgs(utf8("{\"list\":[{\"n\":1},{\"n\":[]}]}"), Outer.class))
        .hasMessage("/list/1/n: expected integer");
    assertThatThrownBy(() -> codec.decodeArgs(utf8("{\"city\":{}}"), Outer.class))
        .hasMessage("/city: expected string")
        .message()
        .doesNotContain("java", "$", "`");
  }
}
