package dev.phrony.worker.bench;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.util.JsonRecyclerPools;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.google.protobuf.ByteString;
import com.google.protobuf.UnsafeByteOperations;
import dev.phrony.runtime.v1.RuntimeGrpc;
import dev.phrony.runtime.v1.WorkClientMsg;
import dev.phrony.runtime.v1.WorkHandlerAdvertisement;
import dev.phrony.runtime.v1.WorkHeartbeat;
import dev.phrony.runtime.v1.WorkInvoke;
import dev.phrony.runtime.v1.WorkRegister;
import dev.phrony.runtime.v1.WorkToolResult;
import io.grpc.ManagedChannel;
import io.grpc.netty.NettyChannelBuilder;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioSocketChannel;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Stand-ins for the other workers, run as a child JVM: the least a worker written directly on
 * grpc-java does to serve {@code echo} (the host's no-op: the args back, after {@code sleep_ms} if
 * given) with {@code max_concurrency} 64. Like both peers' SDKs it hands its handler the arguments
 * decoded from JSON and encodes what the handler returns (Jackson, a tree each way); same flow
 * control as the host (inbound requested in batches, outbound through a writer that honours {@code
 * isReady}); heartbeats every 15 s; nothing else: no outbox, no metrics, no dedupe, no deadline, no
 * cancel. {@code raw} as a fifth argument skips the JSON: the args' bytes go back as they came.
 *
 * <ul>
 *   <li>{@code inline}, the TypeScript SDK's shape: one event loop; each invoke is answered on the
 *       stream's own thread (a {@code sleep_ms} becomes a timer on that loop, as an async handler
 *       would await one).
 *   <li>{@code threads}, the Go worker's shape: a new (virtual) thread per invoke runs the handler
 *       and sends its result itself, under the stream's lock, as goroutines call {@code Send}.
 * </ul>
 *
 * <p>Arguments: {@code inline|threads TARGET WORKER_ID VERSION [raw]}. It advertises {@code
 * echo@VERSION}, so it can share a runtime with a host serving {@code echo@default}.
 */
public final class PeerWorker {
  private static final Pattern SLEEP = Pattern.compile("\"sleep_ms\"\\s*:\\s*(\\d{1,9})");
  private static final ByteString SLEEP_KEY = ByteString.copyFromUtf8("sleep_ms");

  /**
   * Jackson with a shared buffer pool, as the host's: with its default per-thread pool, every fresh
   * virtual thread would allocate its buffers anew, a cost of the JVM, not of the shape.
   */
  private static final ObjectMapper JSON =
      JsonMapper.builder(
              JsonFactory.builder()
                  .recyclerPool(JsonRecyclerPools.newConcurrentDequePool())
                  .build())
          .build();

  private PeerWorker() {}

  public static void main(String[] args) throws InterruptedException {
    boolean inline =
        switch (args[0]) {
          case "inline" -> true;
          case "threads" -> false;
          default ->
              throw new IllegalArgumentException("shape must be inline or threads: " + args[0]);
        };
    // One event loop, which runs every callback of the stream (the direct executor).
    EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
    ManagedChannel channel =
        NettyChannelBuilder.forTarget(args[1])
            .usePlaintext()
            .eventLoopGroup(group)
            .channelType(NioSocketChannel.class)
            .directExecutor()
            .build();
    CountDownLatch done = new CountDownLatch(1);
    Peer peer = new Peer(inline, args.length > 4 && args[4].equals("raw"), group.next(), done);
    RuntimeGrpc.newStub(channel).work(peer);
    peer.send(
        WorkClientMsg.newBuilder()
            .setRegister(
                WorkRegister.newBuilder()
                    .setWorkerId(args[2])
                    .addHandlers(
                        WorkHandlerAdvertisement.newBuilder()
                            .setTool("echo")
                            .setVersion(args[3])
                            .setMaxConcurrency(64)))
            .build());
    ScheduledExecutorService heartbeats = Executors.newSingleThreadScheduledExecutor();
    WorkClientMsg heartbeat =
        WorkClientMsg.newBuilder().setHeartbeat(WorkHeartbeat.getDefaultInstance()).build();
    heartbeats.scheduleAtFixedRate(() -> peer.send(heartbeat), 15, 15, TimeUnit.SECONDS);
    done.await();
    heartbeats.shutdownNow();
    channel.shutdownNow();
    group.shutdownGracefully();
  }

  /** The echo handler's work: its args back, and how long to wait first. */
  static long sleepMs(ByteString args) {
    if (!contains(args, SLEEP_KEY)) { // as cheap as the host's echo: no string, no regex
      return 0;
    }
    Matcher m = SLEEP.matcher(args.toString(StandardCharsets.UTF_8));
    return m.find() ? Long.parseLong(m.group(1)) : 0;
  }

  private static boolean contains(ByteString haystack, ByteString needle) {
    outer:
    for (int i = 0; i <= haystack.size() - needle.size(); i++) {
      for (int k = 0; k < needle.size(); k++) {
        if (haystack.byteAt(i + k) != needle.byteAt(k)) {
          continue outer;
        }
      }
      return true;
    }
    return false;
  }

  private static final class Peer extends WorkerStream {
    private final boolean inline;
    private final boolean raw;
    private final EventLoop loop;

    Peer(boolean inline, boolean raw, EventLoop loop, CountDownLatch done) {
      super(done);
      this.inline = inline;
      this.raw = raw;
      this.loop = loop;
    }

    @Override
    synchronized void drain() {
      super.drain();
    }

    /** Sends under the stream's lock (any thread). */
    @Override
    synchronized void send(WorkClientMsg msg) {
      super.send(msg);
    }

    @Override
    void onInvoke(WorkInvoke invoke) {
      if (inline) {
        long sleep = sleepMs(invoke.getArgs());
        if (sleep > 0) {
          loop.schedule(() -> send(result(invoke)), sleep, TimeUnit.MILLISECONDS);
        } else {
          send(result(invoke));
        }
      } else {
        Thread.ofVirtual()
            .start(
                () -> {
                  long sleep = sleepMs(invoke.getArgs());
                  if (sleep > 0) {
                    try {
                      Thread.sleep(sleep); // the handler's own work: a Go handler's time.Sleep
                    } catch (InterruptedException e) {
                      return;
                    }
                  }
                  send(result(invoke));
                });
      }
    }

    /** The handler's answer: its decoded arguments, encoded again. */
    private WorkClientMsg result(WorkInvoke invoke) {
      ByteString payload = invoke.getArgs();
      if (!raw) {
        try {
          JsonNode args = JSON.readTree(payload.newInput());
          payload = UnsafeByteOperations.unsafeWrap(JSON.writeValueAsBytes(args));
        } catch (IOException e) {
          payload = ByteString.copyFromUtf8("{\"error\":\"arguments are not JSON\"}");
        }
      }
      return WorkClientMsg.newBuilder()
          .setResult(WorkToolResult.newBuilder().setCallId(invoke.getCallId()).setPayload(payload))
          .build();
    }
  }
}
