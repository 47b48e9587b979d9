package dev.phrony.worker.call;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The fast JSON scan vouches only for what Jackson accepts, and does vouch for common JSON. */
class JsonScanTest {
  private static final JsonFactory JACKSON = new JsonFactory();

  private static boolean jackson(byte[] b) {
    try (JsonParser p = JACKSON.createParser(b)) {
      if (p.nextToken() == null) {
        return false;
      }
      p.skipChildren();
      return p.nextToken() == null;
    } catch (IOException e) {
      return false;
    }
  }

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void vouches_for_common_json() {
    for (String s :
        List.of(
            "{}",
            "[]",
            " { } ",
            "0",
            "-0",
            "12.5e-3",
            "1E+2",
            "\"a\"",
            "true",
            "false",
            "null",
            "{\"a\":1,\"b\":[true,false,null,{\"c\":\"\\u00e9\\n\"}]}",
            "[[[]],{},\"x\\\"y\\\\z\\/\"]",
            "\t{\r\n\"k\" : -1.0 }\n",
            "{\"sleep_ms\":50}")) {
      assertThat(JsonScan.certainlyJson(utf8(s))).as(s).isTrue();
      assertThat(jackson(utf8(s))).as(s).isTrue();
    }
  }

  @Test
  void does_not_vouch_for_invalid_or_unusual_json() {
    for (String s :
        List.of(
            "",
            " ",
            "{",
            "}",
            "[1,]",
            "{\"a\":}",
            "{\"a\" 1}",
            "{a:1}",
            "01",
            "1.",
            ".5",
            "+1",
            "-",
            "1e",
            "tru",
            "nul",
            "{}{}",
            "1 2",
            "[1 2]",
            "\"a",
            "\"\\x\"",
            "\"\\u12\"",
            "\"\t\"",
            "'a'",
            "NaN",
            "{\"a\":1,}",
            "[,1]",
            "//c\n{}",
            "é",
            "\"é\"",
            "\uFEFF{}",
            "[".repeat(65) + "]".repeat(65))) {
      assertThat(JsonScan.certainlyJson(utf8(s))).as(s).isFalse();
    }
  }

  @Test
  void never_vouches_for_what_jackson_refuses_on_random_input() {
    String[] atoms = {
      "{",
      "}",
      "[",
      "]",
      ",",
      ":",
      "\"",
      "\\",
      "a",
      "1",
      "0",
      "-",
      ".",
      "e",
      "+",
      " ",
      "\n",
      "true",
      "null",
      "\"k\"",
      "\"\\u0041\"",
      "9",
      "E",
      "\t",
      "f",
      "x"
    };
    Random r = new Random(42);
    int vouched = 0;
    for (int n = 0; n < 200_000; n++) {
      StringBuilder b = new StringBuilder();
      int len = 1 + r.nextInt(12);
      for (int k = 0; k < len; k++) {
        b.append(atoms[r.nextInt(atoms.length)]);
      }
      byte[] doc = utf8(b.toString());
      if (JsonScan.certainlyJson(doc)) {
        vouched++;
        assertThat(jackson(doc)).as(b.toString()).isTrue();
      }
    }
    assertThat(vouched).isGreaterThan(100);
  }

  @Test
  void the_codec_answers_as_jackson_does() {
    JsonCodec codec = new JsonCodec();
    for (String s :
        List.of(
            "{}",
            "{",
            "\uFEFF{}",
            "\"é\"",
            "[".repeat(100) + "]".repeat(100),
            "1 2",
            "{\"a\":[1,2,3]}")) {
      assertThat(codec.isJson(utf8(s))).as(s).isEqualTo(jackson(utf8(s)));
    }
  }
}
