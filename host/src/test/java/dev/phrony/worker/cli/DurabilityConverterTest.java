package dev.phrony.worker.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class DurabilityConverterTest {
  @Test
  void durability_flag_values() {
    DurabilityConverter c = new DurabilityConverter();
    assertThat(c.convert("writes")).isEqualTo(dev.phrony.worker.outbox.Durability.WRITES);
    assertThat(c.convert("ALL")).isEqualTo(dev.phrony.worker.outbox.Durability.ALL);
    assertThat(c.convert("none")).isEqualTo(dev.phrony.worker.outbox.Durability.NONE);
    assertThatThrownBy(() -> c.convert("some"))
        .isInstanceOf(picocli.CommandLine.TypeConversionException.class)
        .hasMessageContaining("expected one of writes, all, none");
    assertThat(new DurabilityConverter.Candidates()).containsExactly("writes", "all", "none");
    assertThat(dev.phrony.worker.outbox.Durability.WRITES.isDurable("idempotent_write")).isTrue();
    assertThat(dev.phrony.worker.outbox.Durability.WRITES.isDurable("read_only")).isFalse();
    assertThat(dev.phrony.worker.outbox.Durability.WRITES.isDurable("")).isFalse();
    assertThat(dev.phrony.worker.outbox.Durability.ALL.isDurable("")).isTrue();
    assertThat(dev.phrony.worker.outbox.Durability.NONE.needsIntent("irreversible_action"))
        .isFalse();
  }
}
