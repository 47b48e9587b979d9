package dev.phrony.worker.config;

import dev.phrony.worker.ops.ListenAddress;
import dev.phrony.worker.ops.LogFormat;
import dev.phrony.worker.ops.LogLevel;
import dev.phrony.worker.outbox.Durability;
import dev.phrony.worker.transport.Transport;
import dev.phrony.worker.warmup.WarmUpBudget;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * The effective configuration of {@code run}: every setting resolved (flag > env > {@code
 * worker.yaml} > default), typed and checked, plus where each value came from. Immutable.
 *
 * @param plugins the plugins directory
 * @param strict refuse to start on any plugin problem (and any reload that has one)
 * @param watchPlugins reload the plugins folder live when it changes
 * @param stateDir the state directory
 * @param durability which results are on disk before they are sent
 * @param orphanRetention how long orphaned and interrupted records are kept
 * @param runtime the runtime's {@code host:port}
 * @param workerId the worker id, when set (else generated and kept in the state dir)
 * @param workloadIdentity the workload identity, when set
 * @param imageDigest the image digest, when set (else computed from the plugin jars)
 * @param drainTimeout how long a shutdown waits for running calls
 * @param maxResultSize largest result payload in bytes
 * @param maxInboundSize largest invoke in bytes
 * @param exposeInternalErrors tell the model the class and message of an unexpected exception
 * @param maxRunawayHandlers handlers still running after a cancel or deadline above which the
 *     worker is not ready
 * @param maxLeakedLoaders leaked class loaders of one plugin at which its reloads are refused
 * @param warmUp how much the call path is warmed before the worker registers
 * @param keepalive HTTP/2 keepalive interval, when on
 * @param http where the probe and metrics endpoint listens, when on
 * @param logFormat log line format
 * @param logLevel log threshold
 * @param transport TLS and bearer token
 * @param handlers an operator's settings per handler (file, env and flags, in that order)
 * @param configFile the config file that was read, if one was
 * @param settings every setting with its value as shown and its source, in option order
 */
public record WorkerConfig(
    Path plugins,
    boolean strict,
    boolean watchPlugins,
    Path stateDir,
    Durability durability,
    Duration orphanRetention,
    String runtime,
    Optional<String> workerId,
    Optional<String> workloadIdentity,
    Optional<String> imageDigest,
    Duration drainTimeout,
    int maxResultSize,
    int maxInboundSize,
    boolean exposeInternalErrors,
    int maxRunawayHandlers,
    int maxLeakedLoaders,
    WarmUpBudget warmUp,
    Optional<Duration> keepalive,
    Optional<ListenAddress> http,
    LogFormat logFormat,
    LogLevel logLevel,
    Transport transport,
    List<HandlerOverrides.Rule> handlers,
    Optional<Path> configFile,
    List<Setting> settings) {

  /** Shown in place of a secret. */
  public static final String REDACTED = "<redacted>";

  /**
   * One setting as {@code config} shows it.
   *
   * @param key the {@code worker.yaml} key (the long option without dashes)
   * @param env its environment variable
   * @param value the effective value as text, boolean or number; null when unset; never a secret
   * @param source where it came from
   */
  public record Setting(String key, String env, Object value, Source source) {
    public Setting {
      Objects.requireNonNull(key, "key");
      Objects.requireNonNull(source, "source");
    }
  }

  public WorkerConfig {
    Objects.requireNonNull(plugins, "plugins");
    Objects.requireNonNull(stateDir, "stateDir");
    Objects.requireNonNull(runtime, "runtime");
    Objects.requireNonNull(transport, "transport");
    settings = List.copyOf(settings);
  }

  /** The setting named {@code key}. */
  public Optional<Setting> setting(String key) {
    return settings.stream().filter(s -> s.key().equals(key)).findFirst();
  }

  /**
   * How to name a setting in a message so the reader finds it where it was set: the flag, the
   * environment variable, or the file and line with the key.
   */
  public String origin(String key) {
    return setting(key).map(s -> origin(s.key(), s.source())).orElse("--" + key);
  }

  /** {@link #origin(String)} for a setting and its source. */
  public static String origin(String key, Source source) {
    return switch (source.kind()) {
      case FLAG, DEFAULT -> "--" + key;
      case ENV -> source.origin();
      case FILE -> source.origin() + ": " + key;
    };
  }
}
