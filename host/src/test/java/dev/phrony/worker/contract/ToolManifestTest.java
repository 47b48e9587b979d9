package dev.phrony.worker.contract;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.phrony.worker.api.SideEffectClass;
import dev.phrony.worker.api.ToolDescriptor;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A handler's Tool document, read back as the runtime's bundle reads it. */
class ToolManifestTest {
  @TempDir Path tmp;

  @Test
  void the_document_of_a_handler_resolves_a_binding_to_its_key_class_and_schema() throws Exception {
    ToolDescriptor d =
        ToolDescriptor.builder("shop.place-order")
            .version("2.1.0")
            .sideEffectClass(SideEffectClass.NON_IDEMPOTENT_WRITE)
            .description("Places an order: one line")
            .inputSchema(
                "{\"type\":\"object\",\"required\":[\"sku\"],\"properties\":{\"sku\":{\"type\":\"string\",\"pattern\":\"\\\\S\"}}}")
            .build();
    Files.createDirectories(tmp.resolve("tools"));
    Files.writeString(tmp.resolve("tools/shop.place-order.yaml"), ToolManifest.yaml(d));
    Path agent =
        Files.writeString(
            tmp.resolve("agent.yaml"),
            """
            apiVersion: phrony.com/v1
            kind: Agent
            metadata: {namespace: shop, name: a, version: 1.0.0}
            spec:
              tools:
                - ref: shop.place-order@^2
            """);

    ResolvedBinding b = Contracts.load(agent).bindings().getFirst();

    assertThat(b.problems()).isEmpty();
    assertThat(b.key()).isEqualTo("shop.place-order@2.1.0");
    assertThat(b.sideEffectClass()).contains("non_idempotent_write");
    assertThat(b.description()).contains("Places an order: one line");
    assertThat(b.inputSchema().orElseThrow().toString()).isEqualTo(d.inputSchema().orElseThrow());
    assertThat(ToolDocument.load(tmp.resolve("tools/shop.place-order.yaml")).inputSchema())
        .isEqualTo(b.inputSchema());
  }

  @Test
  void a_tool_that_is_not_namespace_name_has_no_document() {
    ToolDescriptor echo =
        ToolDescriptor.builder("echo").sideEffectClass(SideEffectClass.READ_ONLY).build();
    assertThatThrownBy(() -> ToolManifest.yaml(echo))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("is routed to echo@default without one");
  }
}
