package dev.phrony.worker.testkit;

import dev.phrony.runtime.v1.RuntimeGrpc;
import io.grpc.HandlerRegistry;
import io.grpc.Server;
import io.grpc.netty.NettyServerBuilder;
import io.netty.channel.ChannelOption;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.BindException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.IntSupplier;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A {@link LocalRuntime}'s server through its incarnations: started on loopback with a registry of
 * its own, stopped gracefully, crashed or closed (see the runtime's methods of the same names). A
 * restart binds the port its previous incarnation just let go of, retrying it for a while.
 */
final class RuntimeServer {
  /** The transport's own inbound limit, above the runtime's (see {@link #bind}). */
  private static final int TRANSPORT_MESSAGE_LIMIT = 64 * 1024 * 1024;

  /** How long a restart keeps retrying to bind the port the previous incarnation just released. */
  private static final Duration BIND_RETRY = Duration.ofSeconds(5);

  /** How long to wait for a forced shutdown to finish. */
  private static final Duration FORCED_STOP_WAIT = Duration.ofSeconds(5);

  private static final Logger log = LoggerFactory.getLogger(LocalRuntime.class);

  private final RuntimeSettings settings;
  private final EventLog events;
  private final AtomicLong streamIds = new AtomicLong();
  private final ExecutorService callbacks;
  private final Supplier<Registry> freshRegistry;
  private final IntSupplier ledgerSize;

  /** Listens tried so far, for the test that a busy first port is not retried. */
  private final AtomicInteger attempts = new AtomicInteger();

  private final Object lifecycle = new Object();
  // Guarded by lifecycle (written only under it; the volatiles are read without it, e.g. during a
  // stop).
  private Server server;
  private boolean closed;
  private volatile int port;
  private volatile boolean running;

  /**
   * Set once the first start has bound its port; only later starts wait for the port to come free.
   */
  private boolean boundBefore;

  /**
   * The current incarnation's registry (a shut-down one while stopped); read without the lifecycle
   * lock.
   */
  private volatile Registry registry;

  /** The session and approval RPCs ({@link LocalRuntime.Builder#sessions}). */
  private final RuntimeGrpc.AsyncService sessions;

  /** Methods no service serves ({@link LocalRuntime.Builder#unknownMethods}), or null. */
  private final HandlerRegistry unknownMethods;

  /**
   * @param freshRegistry the empty registry of each incarnation
   * @param ledgerSize the completed calls kept across incarnations (for the start's log line)
   */
  RuntimeServer(
      RuntimeSettings settings,
      EventLog events,
      ExecutorService callbacks,
      Supplier<Registry> freshRegistry,
      IntSupplier ledgerSize,
      RuntimeGrpc.AsyncService sessions,
      HandlerRegistry unknownMethods) {
    this.settings = settings;
    this.sessions = sessions;
    this.unknownMethods = unknownMethods;
    this.events = events;
    this.callbacks = callbacks;
    this.freshRegistry = freshRegistry;
    this.ledgerSize = ledgerSize;
    this.port = settings.port();
  }

  void start() {
    synchronized (lifecycle) {
      if (closed) {
        throw new IllegalStateException("LocalRuntime is closed");
      }
      if (server != null) {
        throw new IllegalStateException("LocalRuntime is already running on " + target());
      }
      Registry fresh = freshRegistry.get();
      server = bind(port, fresh, boundBefore);
      boundBefore = true;
      port = server.getPort();
      registry = fresh;
      running = true;
      log.info(
          "LocalRuntime listening on {} lease_ttl={} queue_wait={} execution_timeout={} ledger_entries={}",
          target(),
          human(settings.leaseTtl()),
          human(settings.queueWait()),
          human(settings.executionTimeout()),
          ledgerSize.getAsInt());
    }
  }

  void stop() {
    synchronized (lifecycle) {
      if (server == null) {
        return;
      }
      log.info(
          "LocalRuntime stopping on {} (graceful, streams cut after {})",
          target(),
          human(settings.shutdownGrace()));
      running = false;
      registry.shutdown("runtime shutdown");
      server.shutdown();
      if (!awaitTermination(server, settings.shutdownGrace())) {
        log.info("LocalRuntime grace period over, cutting the remaining streams");
        server.shutdownNow();
        awaitTermination(server, FORCED_STOP_WAIT);
      }
      server = null;
      log.info("LocalRuntime stopped");
    }
  }

  void restart() {
    synchronized (lifecycle) {
      log.info("LocalRuntime restarting on {}", target());
      stop();
      start();
    }
  }

  void crash() {
    synchronized (lifecycle) {
      if (server == null) {
        return;
      }
      log.info("LocalRuntime crashing on {} (simulated)", target());
      running = false;
      server.shutdownNow();
      registry.shutdown("runtime crashed");
      awaitTermination(server, FORCED_STOP_WAIT);
      server = null;
    }
  }

  /** Cuts everything at once; false if it was closed already. */
  boolean close() {
    synchronized (lifecycle) {
      if (closed) {
        return false;
      }
      closed = true;
      running = false;
      if (server != null) {
        registry.shutdown("runtime closed");
        server.shutdownNow();
        awaitTermination(server, FORCED_STOP_WAIT);
        server = null;
        log.info("LocalRuntime on {} closed", target());
      }
      return true;
    }
  }

  boolean running() {
    return running;
  }

  int port() {
    return port;
  }

  String target() {
    return "127.0.0.1:" + port;
  }

  Registry registry() {
    return registry;
  }

  /**
   * A started server on {@code wantedPort} (0: a free one) serving {@code registry}; a busy port is
   * retried only when {@code restart}, for up to {@link #BIND_RETRY}.
   *
   * @throws UncheckedIOException if it cannot listen (a {@link BindException} cause when the port
   *     is in use)
   */
  private Server bind(int wantedPort, Registry registry, boolean restart) {
    InetSocketAddress address = new InetSocketAddress(loopback(), wantedPort);
    // Real time on purpose: a restart waits for the kernel to let go of the port, which no
    // injected clock can speed up.
    long deadline = System.nanoTime() + BIND_RETRY.toNanos();
    while (true) {
      attempts.incrementAndGet();
      NettyServerBuilder builder = settings.security().serverBuilder(address);
      if (unknownMethods != null) {
        builder.fallbackHandlerRegistry(unknownMethods);
      }
      Server candidate =
          builder
              .withOption(ChannelOption.SO_REUSEADDR, true)
              .executor(callbacks)
              // The Work stream enforces the configured limit itself, to end the stream with
              // grpc-go's
              // RESOURCE_EXHAUSTED status (grpc-java's transport would just reset it); this is a
              // backstop.
              .maxInboundMessageSize(
                  Math.max(settings.maxInboundMessageSize(), TRANSPORT_MESSAGE_LIMIT))
              // grpc-go's default enforcement: a client ping at most every 5 minutes, none without
              // a call.
              .permitKeepAliveTime(5, TimeUnit.MINUTES)
              .permitKeepAliveWithoutCalls(false)
              .addService(
                  settings
                      .security()
                      .protect(new RuntimeService(registry, events, streamIds, settings, sessions)))
              .addService(new HealthService())
              .build();
      try {
        return candidate.start();
      } catch (IOException e) {
        candidate.shutdownNow();
        boolean portBusy = portBusy(e);
        // After a restart the old listener may need a moment to let go of the port; on the first
        // start a busy port belongs to someone else, so that fails at once.
        if (wantedPort == 0 || !portBusy || !restart || System.nanoTime() > deadline) {
          throw new UncheckedIOException(
              "LocalRuntime could not listen on " + address,
              portBusy && !(e instanceof BindException) ? busy(e, address) : e);
        }
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
      }
    }
  }

  /** Listens tried so far (a busy port retried after a restart counts each try). */
  int attempts() {
    return attempts.get();
  }

  /** Waits up to {@code bound} for {@code server} to end; an interrupt cuts it at once. */
  private static boolean awaitTermination(Server server, Duration bound) {
    try {
      return server.awaitTermination(bound.toNanos(), TimeUnit.NANOSECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      server.shutdownNow();
      return false;
    }
  }

  /**
   * True when {@code e} says the port is taken: a {@link BindException} from NIO, or the native
   * transport's own error (Netty's epoll reports EADDRINUSE as an IOException of its own).
   */
  private static boolean portBusy(Throwable e) {
    for (Throwable c = e; c != null; c = c.getCause()) {
      if (c instanceof BindException
          || (c.getMessage() != null && c.getMessage().contains("Address already in use"))) {
        return true;
      }
    }
    return false;
  }

  /** The busy-port error as the {@link BindException} callers look for, the original its cause. */
  private static BindException busy(IOException e, InetSocketAddress address) {
    BindException b = new BindException("address already in use: " + address);
    b.initCause(e);
    return b;
  }

  private static InetAddress loopback() {
    try {
      return InetAddress.getByName("127.0.0.1");
    } catch (UnknownHostException e) {
      throw new IllegalStateException(e);
    }
  }

  private static String human(Duration d) {
    return d.toMillis() % 1000 == 0 ? d.toSeconds() + "s" : d.toMillis() + "ms";
  }
}
