package dev.phrony.worker.dev;

import static org.assertj.core.api.Assertions.assertThat;

import dev.phrony.worker.api.SideEffectClass;
import dev.phrony.worker.api.ToolDescriptor;
import dev.phrony.worker.api.ToolResult;
import dev.phrony.worker.plugin.HandlerCatalog;
import java.util.List;
import org.junit.jupiter.api.Test;

class ExampleCallTest {

  private static HandlerCatalog.Entry entry(String tool, String version, String schema) {
    ToolDescriptor.Builder b =
        ToolDescriptor.builder(tool).version(version).sideEffectClass(SideEffectClass.READ_ONLY);
    if (schema != null) {
      b.inputSchema(schema);
    }
    ToolDescriptor d = b.build();
    return HandlerCatalog.Entry.of(new DevFixture.Handler(d, call -> ToolResult.json("{}")), "t");
  }

  @Test
  void a_handler_with_a_schema_example_is_preferred() {
    HandlerCatalog catalog =
        HandlerCatalog.of(
            List.of(
                entry("a.needs", "1", "{\"required\":[\"x\"]}"),
                entry("b.free", ToolDescriptor.DEFAULT_VERSION, null),
                entry(
                    "c.shown",
                    "2",
                    "{\"required\":[\"city\"],\"examples\":[{\"city\":\"O'Hare\"}]}")));

    ExampleCall example = ExampleCall.pick(catalog).orElseThrow();

    assertThat(example).isEqualTo(new ExampleCall("c.shown@2", "{\"city\":\"O'Hare\"}"));
    assertThat(example.commandLine(ApprovalsClient.DEFAULT_RUNTIME))
        .isEqualTo("bin/phrony-worker call c.shown@2 '{\"city\":\"O'\\''Hare\"}'");
  }

  @Test
  void else_one_without_required_arguments_and_the_default_version_is_left_out() {
    HandlerCatalog catalog =
        HandlerCatalog.of(
            List.of(
                entry("a.needs", "1", "{\"required\":[\"x\"]}"),
                entry("b.free", ToolDescriptor.DEFAULT_VERSION, null)));

    ExampleCall example = ExampleCall.pick(catalog).orElseThrow();

    assertThat(example.commandLine("127.0.0.1:9000"))
        .isEqualTo("bin/phrony-worker call b.free '{}' --runtime 127.0.0.1:9000");
    assertThat(ExampleCall.pick(HandlerCatalog.of(List.of()))).isEmpty();
  }
}
