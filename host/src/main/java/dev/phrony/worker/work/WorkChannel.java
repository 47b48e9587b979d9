package dev.phrony.worker.work;

import dev.phrony.worker.ops.ReconnectReason;
import io.grpc.CallOptions;
import io.grpc.ConnectivityState;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.ClientCalls;
import io.netty.channel.Channel;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.util.concurrent.DefaultThreadFactory;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The transport to the runtime: one gRPC channel and its one I/O thread, on which inbound messages
 * are handled (nothing in {@link WorkSession#onNext} blocks), every stream's writes are drained
 * (see {@link StreamWriter}) and the dispatcher's context runs. Opens the Work streams the {@link
 * Registrations} ask for, and watches the connection under them.
 */
final class WorkChannel {
  private static final Logger log = LoggerFactory.getLogger(WorkClient.class);

  /**
   * Netty's native epoll transport where it loads (Linux x86-64), else NIO: fewer system calls and
   * allocations per read and write, and an eventfd for wake-ups. {@code
   * -Dphrony.work.transport=nio} forces NIO (to compare them).
   */
  private record IoTransport(
      String name, Supplier<IoHandlerFactory> handlers, Supplier<Channel> newChannel) {
    static IoTransport chosen() {
      return !"nio".equals(System.getProperty("phrony.work.transport")) && Epoll.isAvailable()
          ? new IoTransport("epoll", EpollIoHandler::newFactory, EpollSocketChannel::new)
          : new IoTransport("nio", NioIoHandler::newFactory, NioSocketChannel::new);
    }
  }

  private final WorkOptions options;
  private final IoTransport transport = IoTransport.chosen();
  private final EventLoopGroup ioThread;
  private final EventLoop loop;
  private final Executor writes;
  private final ManagedChannel channel;

  /** Work with this worker's own inbound marshaller (its string cache is this worker's). */
  private final MethodDescriptor<Outbound, Inbound> workMethod = Inbound.workMethod();

  /**
   * @throws IllegalArgumentException if the transport's TLS files cannot be used
   * @throws UncheckedIOException if they cannot be read
   */
  WorkChannel(WorkOptions options, WireTimings timings) {
    this.options = options;
    // Netty's factory makes FastThreadLocalThreads: its buffer caches are then plain field
    // reads, not ThreadLocal lookups (5% of this thread's time when it was a plain Thread).
    this.ioThread =
        new MultiThreadIoEventLoopGroup(
            1, new DefaultThreadFactory("phrony-work-io", true), transport.handlers().get());
    this.loop = ioThread.next();
    HostThreads.ioThreadStarted(loop);
    this.writes =
        r -> {
          if (loop.inEventLoop()) {
            r.run();
          } else {
            loop.execute(r);
          }
        };
    try {
      this.channel = channel(options, transport, ioThread, timings);
    } catch (RuntimeException e) {
      HostThreads.ioThreadEnded(loop);
      ioThread.shutdownGracefully(0, 0, TimeUnit.MILLISECONDS);
      throw e;
    }
  }

  private static ManagedChannel channel(
      WorkOptions options, IoTransport transport, EventLoopGroup io, WireTimings timings) {
    NettyChannelBuilder b;
    try {
      b = NettyChannelBuilder.forTarget(options.target(), options.transport().channelCredentials());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    // No retry layer: the registrations own retries, and on a stream that lives for hours the
    // layer only adds work to every message.
    b.eventLoopGroup(io).directExecutor().disableRetry();
    b.channelFactory(
        () -> {
          Channel ch = transport.newChannel().get();
          ch.pipeline()
              .addFirst(new WireTap(timings)); // next to the socket: before gRPC's handlers
          return ch;
        });
    b.maxInboundMessageSize(options.maxInboundBytes());
    options
        .keepAlive()
        .ifPresent(
            interval -> {
              if (interval.compareTo(WorkOptions.MIN_SAFE_KEEPALIVE) < 0) {
                log.warn(
                    "HTTP/2 keepalive every {} s is more often than the runtime's grpc-go server"
                        + " allows (5 min): it may answer GOAWAY too_many_pings and end the stream",
                    interval.toSeconds());
              }
              b.keepAliveTime(interval.toMillis(), TimeUnit.MILLISECONDS)
                  .keepAliveWithoutCalls(false);
            });
    return b.build();
  }

  /** The I/O thread, as a queue of tasks. */
  EventLoop loop() {
    return loop;
  }

  /** Runs a stream's writes on the I/O thread (at once when already there). */
  Executor writes() {
    return writes;
  }

  /**
   * Opens {@code s}'s stream and sends its register, after {@code first}'s if not null; a failure
   * ends {@code s} at once.
   */
  void open(WorkSession s, Set<String> inFlight, WorkSession.HandOver first) {
    log.debug(
        "stream {} opens on {} ({}) as {}",
        s.id(),
        options.target(),
        transport.name(),
        s.identity().workerId());
    // Our reconnects pace the tries; the channel's own backoff (1 s and up) would only add.
    channel.resetConnectBackoff();
    try {
      CallOptions callOptions = CallOptions.DEFAULT;
      var credentials = options.transport().callCredentials();
      if (credentials.isPresent()) {
        callOptions = callOptions.withCallCredentials(credentials.get());
      }
      // The generated stub's call, with invokes and acks read by Inbound's own marshaller.
      ClientCalls.asyncBidiStreamingCall(channel.newCall(workMethod, callOptions), s);
      s.register(inFlight, first);
    } catch (RuntimeException e) {
      log.error("stream {} could not be used", s.id(), e);
      s.couldNotOpen(e);
    }
  }

  /**
   * A runtime shutting down sends GOAWAY and drops its registry before the stream ends; a result
   * sent in that window is for a call it no longer knows and would end the stream with NOT_FOUND.
   * So once the connection leaves READY, the stream is ended from our side and its unsent results
   * stay held for the next registration.
   */
  void watch(WorkSession s) {
    ConnectivityState state = channel.getState(false);
    if (state != ConnectivityState.READY) {
      if (s.live()) {
        // A runtime going away drops every registration itself: no need to wait for it.
        s.cut(
            ReconnectReason.GOING_AWAY, "connection to the runtime is going away (" + state + ")");
      }
      return;
    }
    channel.notifyWhenStateChanged(
        ConnectivityState.READY,
        () -> {
          if (s.live()) {
            watch(s);
          }
        });
  }

  /** The channel's connectivity now, without asking it to connect. */
  ConnectivityState state() {
    return channel.getState(false);
  }

  /** Closes the channel now and lets the I/O thread end within {@code wait}. */
  void close(Duration wait) {
    channel.shutdownNow();
    HostThreads.ioThreadEnded(loop);
    ioThread.shutdownGracefully(0, wait.toMillis(), TimeUnit.MILLISECONDS);
  }
}
