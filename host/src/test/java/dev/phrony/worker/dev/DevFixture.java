package dev.phrony.worker.dev;

import dev.phrony.worker.api.SideEffectClass;
import dev.phrony.worker.api.ToolCall;
import dev.phrony.worker.api.ToolDescriptor;
import dev.phrony.worker.api.ToolException;
import dev.phrony.worker.api.ToolHandler;
import dev.phrony.worker.api.ToolResult;
import dev.phrony.worker.plugin.HandlerCatalog;
import dev.phrony.worker.work.WorkerIdentity;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;

/**
 * A {@link DevServer} on free loopback ports whose host serves test handlers:
 *
 * <ul>
 *   <li>{@code echo@1.0.0}: returns its arguments;
 *   <li>{@code fail@1.0.0}: tool error {@code out_of_stock: no more widgets};
 *   <li>{@code text@default}: the plain text {@code plain words} (not JSON);
 *   <li>{@code hold@1.0.0}: one slot; runs until interrupted (cancel, deadline), at most 60 s.
 * </ul>
 */
public final class DevFixture {
  public static final String WORKER_ID = "dev-test-worker";

  private DevFixture() {}

  /** A handler made of a lambda. */
  record Handler(ToolDescriptor descriptor, Body body) implements ToolHandler {
    interface Body {
      ToolResult handle(ToolCall call) throws Exception;
    }

    static Handler of(String tool, String version, int maxConcurrency, Body body) {
      return new Handler(
          ToolDescriptor.builder(tool)
              .version(version)
              .maxConcurrency(maxConcurrency)
              .sideEffectClass(SideEffectClass.READ_ONLY)
              .description(tool + " for tests")
              .build(),
          body);
    }

    /**
     * {@code pay@1.0.0}, a non-idempotent write whose input needs a number {@code amount}, the
     * approvals' subject: it counts its runs in {@code paid} and answers its arguments.
     */
    static Handler pay(AtomicInteger paid) {
      return new Handler(
          ToolDescriptor.builder("pay")
              .version("1.0.0")
              .maxConcurrency(4)
              .sideEffectClass(SideEffectClass.NON_IDEMPOTENT_WRITE)
              .inputSchema(PAY_SCHEMA)
              .build(),
          call -> {
            paid.incrementAndGet();
            return ToolResult.json(call.argsBytes());
          });
    }

    @Override
    public ToolResult handle(ToolCall call) throws Exception {
      return body.handle(call);
    }
  }

  /** The input schema of {@link Handler#pay}. */
  static final String PAY_SCHEMA =
      "{\"type\":\"object\",\"required\":[\"amount\"],"
          + "\"properties\":{\"amount\":{\"type\":\"number\"}}}";

  /** A handler (8 slots) answering with {@code body}, for tests outside this package. */
  public static ToolHandler handler(
      String tool, String version, java.util.function.Function<ToolCall, ToolResult> body) {
    return Handler.of(tool, version, 8, body::apply);
  }

  public static HandlerCatalog catalog(ToolHandler... extra) {
    Stream<ToolHandler> handlers =
        Stream.of(
            Handler.of("echo", "1.0.0", 8, call -> ToolResult.json(call.argsBytes())),
            Handler.of(
                "fail",
                "1.0.0",
                8,
                call -> {
                  throw new ToolException("out_of_stock", "no more widgets");
                }),
            Handler.of(
                "text", ToolDescriptor.DEFAULT_VERSION, 8, call -> ToolResult.text("plain words")),
            Handler.of(
                "hold",
                "1.0.0",
                1,
                call -> {
                  // Its behaviour: it holds its slot until cancelled (interrupted); no test waits
                  // on it.
                  Thread.sleep(Duration.ofSeconds(60));
                  return ToolResult.json("{\"held\":true}");
                }));
    return HandlerCatalog.of(
        Stream.concat(handlers, Stream.of(extra))
            .map(h -> HandlerCatalog.Entry.of(h, "test"))
            .toList());
  }

  /** Runtime, control API and a host serving {@link #catalog}. */
  public static DevServer start() {
    return DevServer.start(new DevServer.Options(0, 0, Optional.of(host(catalog()))));
  }

  /** The same, holding calls for approval as {@code approvals} says. */
  public static DevServer start(ApprovalPolicy approvals) {
    return DevServer.start(new DevServer.Options(0, 0, Optional.of(host(catalog())), approvals));
  }

  /** Runtime and control API only. */
  public static DevServer startWithoutHost() {
    return DevServer.start(new DevServer.Options(0, 0, Optional.empty()));
  }

  public static DevServer.Host host(HandlerCatalog catalog) {
    return new DevServer.Host(
        catalog,
        new WorkerIdentity(WORKER_ID, "", "sha256:test"),
        Path.of("test-plugins"),
        List.of(),
        Duration.ofSeconds(5));
  }
}
