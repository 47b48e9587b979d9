package dev.phrony.worker.ops;

import static org.assertj.core.api.Assertions.assertThat;

import dev.phrony.worker.Printable;
import org.junit.jupiter.api.Test;

class KeyValueLayoutTest {

  private static String field(String v) {
    StringBuilder b = new StringBuilder();
    if (KeyValueLayout.needsQuotes(v)) {
      Printable.appendQuoted(b, v);
    } else {
      b.append(v);
    }
    return b.toString();
  }

  @Test
  void plain_tokens_stay_bare_anything_else_is_quoted_and_escaped() {
    assertThat(field("echo@default")).isEqualTo("echo@default");
    assertThat(field("127.0.0.1:7777")).isEqualTo("127.0.0.1:7777");
    assertThat(field("")).isEqualTo("\"\"");
    assertThat(field("a b")).isEqualTo("\"a b\"");
    assertThat(field("k=v")).isEqualTo("\"k=v\"");
    assertThat(field("say \"hi\"")).isEqualTo("\"say \\\"hi\\\"\"");
    assertThat(field("c:\\dir")).isEqualTo("\"c:\\\\dir\"");
    assertThat(field("one\ntwo\tthree\r")).isEqualTo("\"one\\ntwo\\tthree\\r\"");
    assertThat(field("bell\u0007")).isEqualTo("\"bell\\u0007\"");
  }
}
