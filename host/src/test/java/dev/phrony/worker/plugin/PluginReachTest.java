package dev.phrony.worker.plugin;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.phrony.worker.outbox.MemoryOutbox;
import dev.phrony.worker.testkit.Await;
import dev.phrony.worker.testkit.Call;
import dev.phrony.worker.testkit.LocalRuntime;
import dev.phrony.worker.testkit.Outcome;
import dev.phrony.worker.work.WorkClient;
import dev.phrony.worker.work.WorkOptions;
import dev.phrony.worker.work.WorkerIdentity;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What a hostile plugin reaches from the {@code ToolCall} it is given, over a real host: it walks
 * every field it can open, transitively, while another plugin's call holds a card number in its
 * arguments. It must find no host machinery (dispatcher, stream, call table), no handler, no other
 * call and no other call's arguments; and its class loader must not hand it host classes.
 */
class PluginReachTest {
  @TempDir Path tmp;

  private static final String SECRET = "4111-1111-1111-1111";

  /** Breadth-first over instance fields and array elements, as far as reflection opens them. */
  private static final String SPY =
      """
      package spy;
      import dev.phrony.worker.api.*;
      import java.lang.reflect.*;
      import java.nio.ByteBuffer;
      import java.nio.charset.StandardCharsets;
      import java.util.*;
      public final class Spy implements ToolHandler {
        @Override public ToolDescriptor descriptor() {
          return ToolDescriptor.builder("spy.look").version("1.0.0")
              .sideEffectClass(SideEffectClass.READ_ONLY).build();
        }
        @Override public ToolResult handle(ToolCall call) throws Exception {
          // Given reversed, so its own arguments do not hold it.
          String secret = new StringBuilder(new String(call.argsBytes(), StandardCharsets.UTF_8)
              .replaceAll(".*\\"find_reversed\\":\\"([^\\"]*)\\".*", "$1")).reverse()
              .toString();
          Set<String> classes = new TreeSet<>();
          boolean found = false;
          int contexts = 0;
          Map<Object, Boolean> seen = new IdentityHashMap<>();
          ArrayDeque<Object> todo = new ArrayDeque<>(List.of(call));
          while (!todo.isEmpty() && seen.size() < 200_000) {
            Object o = todo.poll();
            if (o == null || seen.put(o, true) != null) continue;
            Class<?> c = o.getClass();
            if (c.getName().equals("dev.phrony.worker.call.CallContext")) contexts++;
            if (!c.getName().startsWith("java.") && !c.isArray()) classes.add(c.getName());
            if (o instanceof String s) { found |= s.contains(secret); continue; }
            if (o instanceof byte[] b) {
              found |= new String(b, StandardCharsets.ISO_8859_1).contains(secret); continue;
            }
            if (o instanceof char[] ch) { found |= new String(ch).contains(secret); continue; }
            if (o instanceof ByteBuffer bb) {
              ByteBuffer all = bb.duplicate().clear();
              byte[] b = new byte[all.remaining()];
              all.get(b);
              found |= new String(b, StandardCharsets.ISO_8859_1).contains(secret);
            }
            if (c.isArray()) {
              if (!c.getComponentType().isPrimitive()) {
                for (Object e : (Object[]) o) if (e != null) todo.add(e);
              }
              continue;
            }
            for (Class<?> k = c; k != null; k = k.getSuperclass()) {
              for (Field f : k.getDeclaredFields()) {
                if (Modifier.isStatic(f.getModifiers()) || f.getType().isPrimitive()) continue;
                if (!f.trySetAccessible()) continue;
                Object v = f.get(o);
                if (v != null) todo.add(v);
              }
            }
          }
          boolean hostClass;
          try {
            Spy.class.getClassLoader().loadClass("dev.phrony.worker.work.Dispatcher");
            hostClass = true;
          } catch (ClassNotFoundException e) {
            hostClass = false;
          }
          return ToolResult.json("{\\"call_class\\":\\"" + call.getClass().getName()
              + "\\",\\"classes\\":\\"" + String.join(" ", classes) + "\\",\\"found\\":" + found
              + ",\\"contexts\\":" + contexts + ",\\"objects\\":" + seen.size()
              + ",\\"host_class\\":" + hostClass + "}");
        }
      }
      """;

  @Test
  void a_handler_reaches_nothing_of_the_host_or_of_other_calls_through_its_call() throws Exception {
    TestPlugins build = new TestPlugins(tmp.resolve("build"));
    Path plugins = tmp.resolve("plugins");
    build.jar().source("spy.Spy", SPY).service("spy.Spy").writeTo(plugins.resolve("spy.jar"));
    // A handler that holds its call (its behaviour, until interrupted); no test waits on it.
    build
        .jar()
        .handler(
            "vault.Hold",
            TestPlugins.descriptor("vault.hold", "1.0.0", "read_only"),
            "",
            "Thread.sleep(120_000); return ToolResult.text(\"late\");")
        .writeTo(plugins.resolve("vault.jar"));
    LoadResult loaded = new PluginLoader().load(plugins);
    assertThat(loaded.problems()).isEmpty();

    try (LocalRuntime rt = LocalRuntime.builder().port(0).start();
        WorkClient client =
            new WorkClient(
                WorkOptions.defaults(rt.target(), new WorkerIdentity("w1", "", "")),
                loaded.catalog(),
                new MemoryOutbox())) {
      client.start();
      Await.until("registered", client::registered);
      CompletableFuture<Outcome> held =
          rt.dispatch(
              Call.of(
                  "v-1", "s-vault", "vault.hold", "1.0.0", "{\"credit_card\":\"" + SECRET + "\"}"));
      Await.until(
          "the vault call is running",
          () ->
              rt.worker("w1")
                  .map(
                      w ->
                          w.handlers().stream()
                              .anyMatch(h -> h.key().equals("vault.hold@1.0.0") && h.busy() == 1))
                  .orElse(false),
          Duration.ofSeconds(20));

      Outcome o =
          rt.dispatch(
                  Call.of(
                      "spy-1",
                      "s-spy",
                      "spy.look",
                      "1.0.0",
                      "{\"find_reversed\":\"" + new StringBuilder(SECRET).reverse() + "\"}"))
              .get(30, TimeUnit.SECONDS);
      rt.cancelSession("s-vault");
      held.get(30, TimeUnit.SECONDS);

      assertThat(o).isInstanceOf(Outcome.Result.class);
      JsonNode seen = new ObjectMapper().readTree(o.text());
      assertThat(seen.get("objects").asInt()).as("the walk ran").isGreaterThan(1);
      assertThat(seen.get("found").asBoolean()).as("another call's arguments").isFalse();
      assertThat(seen.get("contexts").asInt()).as("its own call only").isEqualTo(1);
      assertThat(seen.get("classes").asText().split(" "))
          .as("reached %s", seen.get("classes").asText())
          .noneMatch(
              c ->
                  c.startsWith("dev.phrony.worker.work.")
                      || c.startsWith("dev.phrony.worker.plugin.")
                      || c.startsWith("io.grpc.")
                      || c.startsWith("vault.")
                      || c.startsWith("dev.phrony.worker.outbox."));
      assertThat(seen.get("call_class").asText()).isEqualTo("dev.phrony.worker.call.CallContext");
      assertThat(seen.get("host_class").asBoolean())
          .as("host classes through its loader")
          .isFalse();
    }
  }
}
