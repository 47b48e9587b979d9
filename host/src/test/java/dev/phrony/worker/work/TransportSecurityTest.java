package dev.phrony.worker.work;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.ThrowableProxyUtil;
import ch.qos.logback.core.read.ListAppender;
import dev.phrony.worker.api.ToolResult;
import dev.phrony.worker.ops.FrameLogGuard;
import dev.phrony.worker.ops.MicrometerMetrics;
import dev.phrony.worker.outbox.MemoryOutbox;
import dev.phrony.worker.testing.TestCerts;
import dev.phrony.worker.testkit.Await;
import dev.phrony.worker.testkit.Call;
import dev.phrony.worker.testkit.LocalRuntime;
import dev.phrony.worker.transport.BearerToken;
import dev.phrony.worker.transport.Transport;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

/**
 * TLS, mutual TLS and the bearer token against a {@link LocalRuntime} that serves TLS with
 * certificates made by the test, as a TLS-terminating proxy in front of the runtime would.
 */
class TransportSecurityTest {
  private static final Duration WAIT = Duration.ofSeconds(20);
  private static final String TOKEN = "tok-8b1f0e52d4c3a9";

  @TempDir static Path dir;
  static TestCerts serverCa;
  static TestCerts clientCa;
  static TestCerts.Pem server;
  static TestCerts.Pem client;
  static TestCerts.Pem stranger;

  private final List<AutoCloseable> closeables = new ArrayList<>();
  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
  private final MicrometerMetrics metrics = new MicrometerMetrics(registry);
  private final ListAppender<ILoggingEvent> logs = new ListAppender<>();
  private final Logger root = (Logger) LoggerFactory.getLogger(Logger.ROOT_LOGGER_NAME);
  private Level rootLevel;

  @BeforeAll
  static void certificates() throws Exception {
    serverCa = TestCerts.newCa(dir.resolve("server"), "runtime-ca");
    clientCa = TestCerts.newCa(dir.resolve("client"), "workers-ca");
    server = serverCa.server("runtime");
    client = clientCa.client("worker-1");
    stranger = TestCerts.newCa(dir.resolve("other"), "other-ca").client("stranger");
  }

  @BeforeEach
  void captureLogs() {
    // As 'run' sets logging up (LogSetup): HTTP/2 frame logs, with their headers, never reach it.
    FrameLogGuard.install(root.getLoggerContext());
    rootLevel = root.getLevel();
    root.setLevel(Level.DEBUG);
    logs.start();
    root.addAppender(logs);
  }

  @AfterEach
  void tearDown() throws Exception {
    for (int i = closeables.size() - 1; i >= 0; i--) {
      closeables.get(i).close();
    }
    root.detachAppender(logs);
    root.setLevel(rootLevel);
    metrics.close();
  }

  private LocalRuntime runtime(LocalRuntime.Builder b) {
    LocalRuntime rt = b.port(0).shutdownGrace(Duration.ZERO).start();
    closeables.add(rt);
    return rt;
  }

  private WorkClient worker(LocalRuntime rt, Transport transport) {
    TestHandler echo = TestHandler.of("echo", 4, call -> ToolResult.json(call.argsBytes()));
    WorkOptions options =
        WorkOptions.defaults(rt.target(), new WorkerIdentity("w1", "", ""))
            .withBackoff(Duration.ofMillis(20), Duration.ofMillis(100))
            .withTransport(transport);
    WorkClient c =
        new WorkClient(
            options,
            TestHandler.catalog(echo),
            new MemoryOutbox(),
            null,
            bound -> bound / 2,
            metrics);
    closeables.add(c);
    c.start();
    return c;
  }

  private static Transport tls(Path ca, TestCerts.Pem clientCert, BearerToken token) {
    return new Transport(
        true,
        Optional.of(ca),
        Optional.ofNullable(clientCert).map(TestCerts.Pem::cert),
        Optional.ofNullable(clientCert).map(TestCerts.Pem::key),
        Optional.ofNullable(token),
        false);
  }

  private static void echoes(LocalRuntime rt) throws Exception {
    assertThat(rt.dispatch(Call.of("echo", "1.0.0", "{\"x\":1}")).get(20, TimeUnit.SECONDS).text())
        .isEqualTo("{\"x\":1}");
  }

  private double reconnects(String reason) {
    return registry.get(MicrometerMetrics.RECONNECTS).tag("reason", reason).counter().count();
  }

  private void assertTokenNeverLogged() {
    for (ILoggingEvent e : List.copyOf(logs.list)) {
      assertThat(e.getFormattedMessage()).doesNotContain(TOKEN);
      if (e.getThrowableProxy() != null) {
        assertThat(ThrowableProxyUtil.asString(e.getThrowableProxy())).doesNotContain(TOKEN);
      }
      assertThat(e.getMDCPropertyMap().values()).noneMatch(v -> v.contains(TOKEN));
    }
  }

  @Test
  void tls_with_a_private_ca() throws Exception {
    LocalRuntime rt = runtime(LocalRuntime.builder().tls(server.cert(), server.key()));
    WorkClient w = worker(rt, tls(serverCa.caPem(), null, null));
    Await.until("registered over TLS", w::registered, WAIT);
    echoes(rt);
  }

  @Test
  void a_server_certificate_from_an_untrusted_ca_is_refused() throws Exception {
    LocalRuntime rt = runtime(LocalRuntime.builder().tls(server.cert(), server.key()));
    WorkClient w = worker(rt, tls(clientCa.caPem(), null, null));
    Await.until("two failed attempts", () -> w.reconnects() >= 2, WAIT);
    assertThat(w.registered()).isFalse();
    assertThat(reconnects("unavailable")).isGreaterThanOrEqualTo(2);
    assertThat(tlsWarnings())
        .as("once, not at every attempt")
        .singleElement()
        .asString()
        .contains("is not signed by a CA this worker trusts: set --tls-ca")
        .contains("(cause: ")
        .containsIgnoringCase("certification path");
  }

  private List<String> tlsWarnings() {
    return List.copyOf(logs.list).stream()
        .filter(e -> e.getLevel() == Level.WARN)
        .map(ILoggingEvent::getFormattedMessage)
        .filter(m -> m.startsWith("TLS to "))
        .toList();
  }

  @Test
  void mutual_tls_needs_a_client_certificate_from_the_trusted_ca() throws Exception {
    LocalRuntime rt =
        runtime(LocalRuntime.builder().tls(server.cert(), server.key()).clientCa(clientCa.caPem()));
    WorkClient anonymous = worker(rt, tls(serverCa.caPem(), null, null));
    Await.until("anonymous refused twice", () -> anonymous.reconnects() >= 2, WAIT);
    assertThat(anonymous.registered()).isFalse();
    anonymous.close();
    assertThat(tlsWarnings())
        .as("%s", tlsWarnings())
        .isNotEmpty()
        .allSatisfy(
            m ->
                assertThat(m)
                    .contains(
                        "refused this worker's client certificate, or wants one: set --tls-cert"));

    WorkClient foreign = worker(rt, tls(serverCa.caPem(), stranger, null));
    Await.until("stranger refused twice", () -> foreign.reconnects() >= 2, WAIT);
    assertThat(foreign.registered()).isFalse();
    foreign.close();

    WorkClient known = worker(rt, tls(serverCa.caPem(), client, null));
    Await.until("registered with mutual TLS", known::registered, WAIT);
    echoes(rt);
  }

  @Test
  void the_bearer_token_is_sent_over_tls_and_never_logged() throws Exception {
    LocalRuntime rt =
        runtime(LocalRuntime.builder().tls(server.cert(), server.key()).requireBearerToken(TOKEN));
    WorkClient wrong = worker(rt, tls(serverCa.caPem(), null, BearerToken.of("not-" + TOKEN)));
    Await.until("refused twice", () -> reconnects("unauthenticated") >= 2, WAIT);
    assertThat(wrong.registered()).isFalse();
    wrong.close();

    WorkClient right = worker(rt, tls(serverCa.caPem(), null, BearerToken.of(TOKEN)));
    Await.until("registered with the token", right::registered, WAIT);
    echoes(rt);
    assertThat(logs.list).isNotEmpty();
    assertTokenNeverLogged();
    assertThat(BearerToken.of(TOKEN).toString()).doesNotContain(TOKEN);
  }

  @Test
  void a_token_file_is_read_again_at_each_reconnect() throws Exception {
    LocalRuntime rt =
        runtime(LocalRuntime.builder().tls(server.cert(), server.key()).requireBearerToken(TOKEN));
    Path file = Files.writeString(dir.resolve("token"), "expired-token\n");
    WorkClient w = worker(rt, tls(serverCa.caPem(), null, BearerToken.fromFile(file)));
    Await.until("refused with the old token", () -> reconnects("unauthenticated") >= 1, WAIT);

    Files.writeString(dir.resolve("token.new"), TOKEN + "\n");
    Files.move(
        dir.resolve("token.new"),
        file,
        java.nio.file.StandardCopyOption.REPLACE_EXISTING,
        java.nio.file.StandardCopyOption.ATOMIC_MOVE);
    Await.until("registered with the rotated token", w::registered, WAIT);
    echoes(rt);
    assertTokenNeverLogged();
  }

  @Test
  void a_token_goes_over_plaintext_only_when_allowed() throws Exception {
    assertThatThrownBy(
            () ->
                new Transport(
                    false,
                    Optional.empty(),
                    Optional.empty(),
                    Optional.empty(),
                    Optional.of(BearerToken.of(TOKEN)),
                    false))
        .hasMessage("a bearer token is only sent over TLS");

    LocalRuntime rt = runtime(LocalRuntime.builder().requireBearerToken(TOKEN));
    WorkClient w =
        worker(
            rt,
            new Transport(
                false,
                Optional.empty(),
                Optional.empty(),
                Optional.empty(),
                Optional.of(BearerToken.of(TOKEN)),
                true));
    Await.until("registered over plaintext (allowed)", w::registered, WAIT);
    echoes(rt);
    assertTokenNeverLogged();
  }
}
