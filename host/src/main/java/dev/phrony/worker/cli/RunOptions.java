package dev.phrony.worker.cli;

import dev.phrony.worker.config.Configurable;
import dev.phrony.worker.config.DurationParser;
import dev.phrony.worker.config.Env;
import dev.phrony.worker.ops.ListenAddress;
import dev.phrony.worker.ops.LogFormat;
import dev.phrony.worker.ops.LogLevel;
import dev.phrony.worker.outbox.Durability;
import dev.phrony.worker.plugin.PluginUnloader;
import dev.phrony.worker.warmup.WarmUpBudget;
import dev.phrony.worker.work.WorkOptions;
import dev.phrony.worker.work.WorkerIdentity;
import java.nio.file.Path;
import java.time.Duration;
import picocli.CommandLine;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * Every setting of {@code run}, as a picocli mixin shared by {@code run} and {@code config}. Each
 * option is also an environment variable and a {@code worker.yaml} key (see {@link
 * dev.phrony.worker.config.Settings}); {@link WorkerSettings} turns the parsed options into a
 * {@link dev.phrony.worker.config.WorkerConfig}.
 */
@Configurable
final class RunOptions {
  static final String DEFAULT_RUNTIME_ADDR = "127.0.0.1:7777";
  static final String DEFAULT_HTTP = "127.0.0.1:9464";

  /** The settings of {@code run} on their own, for a command that reads them from its file. */
  static CommandLine.Model.CommandSpec settings() {
    return CommandLine.Model.CommandSpec.forAnnotatedObject(new RunOptions());
  }

  @Mixin PluginsOption plugins;

  @Mixin StateDirOption stateDir;

  @Mixin HandlerOption handlers;

  @Option(
      names = "--durability",
      paramLabel = "writes|all|none",
      defaultValue = "writes",
      converter = DurabilityConverter.class,
      completionCandidates = DurabilityConverter.Candidates.class,
      description =
          "Which results are on disk before they are sent: writes (calls of "
              + "write and irreversible classes; default), all, or none (memory only).")
  Durability durability;

  @Option(
      names = "--orphan-retention",
      paramLabel = "DURATION",
      defaultValue = "7d",
      converter = DurationParser.class,
      description =
          "How long orphaned and interrupted records are kept for an operator " + "(default: 7d).")
  Duration orphanRetention;

  @Env("PHRONY_RUNTIME_ADDR")
  @Option(
      names = "--runtime",
      paramLabel = "HOST:PORT",
      defaultValue = DEFAULT_RUNTIME_ADDR,
      description = "Runtime address ($PHRONY_RUNTIME_ADDR; default: ${DEFAULT-VALUE}).")
  String runtime;

  @Env(WorkerIdentity.ENV_WORKER_ID)
  @Option(
      names = "--worker-id",
      paramLabel = "ID",
      description =
          "Worker id ($WORKER_ID; default: <hostname>-<8 hex>, kept in the state " + "directory).")
  String workerId;

  @Env(WorkerIdentity.ENV_WORKLOAD_IDENTITY)
  @Option(
      names = "--workload-identity",
      paramLabel = "ID",
      description = "Workload identity ($WORKER_WORKLOAD_IDENTITY; default: empty).")
  String workloadIdentity;

  @Env(WorkerIdentity.ENV_IMAGE_DIGEST)
  @Option(
      names = "--image-digest",
      paramLabel = "DIGEST",
      description =
          "Image digest ($WORKER_IMAGE_DIGEST; default: sha256 of the host version "
              + "and the plugin jars, see list-handlers).")
  String imageDigest;

  @Option(
      names = "--drain-timeout",
      paramLabel = "DURATION",
      defaultValue = "30s",
      converter = DurationParser.class,
      description =
          "Bounds a shutdown's drain (leaving routing, then running calls), and how "
              + "long an old plugin generation may wind down after a reload (default: "
              + "${DEFAULT-VALUE}).")
  Duration drainTimeout;

  @Option(
      names = "--watch-plugins",
      paramLabel = "on|off",
      defaultValue = "on",
      description =
          "Reload the plugins folder live when its jars change (default: on). SIGHUP "
              + "and POST /plugins/reload on the HTTP endpoint reload either way.")
  String watchPlugins;

  @Option(
      names = "--max-result-size",
      paramLabel = "BYTES",
      defaultValue = "" + WorkOptions.DEFAULT_MAX_RESULT_BYTES,
      description =
          "Largest result payload; larger ones become result_too_large errors. "
              + "Default and maximum: ${DEFAULT-VALUE} (4 MiB minus 16 KiB; the runtime rejects "
              + "messages over 4 MiB).")
  int maxResultSize;

  @Option(
      names = "--max-inbound-size",
      paramLabel = "BYTES",
      defaultValue = "" + WorkOptions.DEFAULT_MAX_INBOUND_BYTES,
      description =
          "Largest invoke accepted (default: ${DEFAULT-VALUE}, 64 MiB; at least " + "4 MiB).")
  int maxInboundSize;

  @Option(
      names = "--expose-internal-errors",
      description =
          "Tell the model the class and message of a handler's unexpected exception "
              + "(development). Off: it gets 'internal error (ref ID)', and the log has the "
              + "exception under that ref, since its text may hold secrets.")
  boolean exposeInternalErrors;

  @Option(
      names = "--max-runaway-handlers",
      paramLabel = "N",
      defaultValue = "" + WorkOptions.DEFAULT_MAX_RUNAWAY,
      description =
          "Handlers that ignored a cancel or deadline and still run (their results are "
              + "dropped) above which the worker reports not-ready on /readyz (default: "
              + "${DEFAULT-VALUE}). Each one holds a thread and whatever it holds; restart the worker "
              + "to end them.")
  int maxRunawayHandlers;

  @Option(
      names = "--max-leaked-loaders",
      paramLabel = "N",
      defaultValue = "" + PluginUnloader.DEFAULT_MAX_LEAKED,
      description =
          "Old class loaders of one plugin still in memory after its reloads (each keeps all "
              + "its classes and static data) at which further reloads of that plugin are refused "
              + "(default: ${DEFAULT-VALUE}); restart the worker to clear them.")
  int maxLeakedLoaders;

  @Option(
      names = "--warm-up",
      paramLabel = "off|CALLS|DURATION",
      defaultValue = WarmUpBudget.DEFAULT,
      converter = WarmUpConverter.class,
      description =
          "Before it registers, serve this many calls (or for this long, at most 60s) of "
              + "built-in no-op handlers through the worker's own call path over loopback, so "
              + "that the JIT has compiled it before the runtime's load arrives, then one at a "
              + "time until the JIT is idle (at most 3s more); never a plugin's handler. off "
              + "registers at once (default: ${DEFAULT-VALUE}).")
  WarmUpBudget warmUp;

  @Option(
      names = "--keepalive",
      paramLabel = "DURATION",
      converter = DurationParser.class,
      description =
          "HTTP/2 keepalive ping interval; off by default. Under 5 minutes the "
              + "runtime's grpc-go server may answer too_many_pings and end the stream.")
  Duration keepalive;

  @Option(
      names = "--http",
      paramLabel = "HOST:PORT|none",
      defaultValue = DEFAULT_HTTP,
      converter = ListenAddressConverter.class,
      description =
          "Where /metrics, /healthz, /readyz, /handlers and POST /plugins/reload "
              + "listen (default: ${DEFAULT-VALUE}; 0.0.0.0:9464 for probes from outside the host; "
              + "none turns them off).")
  String http;

  @Option(
      names = "--log-format",
      paramLabel = "text|json",
      defaultValue = "text",
      description =
          "Log lines on stderr: text (key=value) or json (one object per line); "
              + "default: ${DEFAULT-VALUE}.")
  LogFormat logFormat;

  @Option(
      names = "--log-level",
      paramLabel = "LEVEL",
      defaultValue = "INFO",
      converter = LogLevelConverter.class,
      description =
          "TRACE, DEBUG, INFO, WARN or ERROR (default: ${DEFAULT-VALUE}). "
              + "Per-call lines are at DEBUG.")
  LogLevel logLevel;

  @Option(
      names = "--tls",
      description =
          "Connect with TLS, trusting the system's CAs (or --tls-ca). Any --tls-* "
              + "option turns it on.")
  boolean tls;

  @Option(
      names = "--tls-ca",
      paramLabel = "FILE",
      description = "PEM file of the CA(s) to trust for the runtime's certificate.")
  Path tlsCa;

  @Option(
      names = "--tls-cert",
      paramLabel = "FILE",
      description = "PEM client certificate chain for mutual TLS (with --tls-key).")
  Path tlsCert;

  @Option(
      names = "--tls-key",
      paramLabel = "FILE",
      description = "PEM (PKCS#8) private key of --tls-cert.")
  Path tlsKey;

  @Option(
      names = "--token-file",
      paramLabel = "FILE",
      description =
          "Send the bearer token in FILE as 'authorization: Bearer <token>' on the "
              + "Work stream (read again at each reconnect). $PHRONY_WORKER_TOKEN gives the token "
              + "itself. Only sent over TLS unless --allow-insecure-token.")
  Path tokenFile;

  @Option(
      names = "--allow-insecure-token",
      description = "Send the bearer token without TLS too (e.g. to a sidecar on localhost).")
  boolean allowInsecureToken;

  /** {@code --http}: {@code HOST:PORT} or {@code none}, checked; kept as text. */
  static final class ListenAddressConverter implements CommandLine.ITypeConverter<String> {
    @Override
    public String convert(String value) {
      try {
        return ListenAddress.parse(value).map(ListenAddress::toString).orElse(ListenAddress.NONE);
      } catch (IllegalArgumentException e) {
        throw new CommandLine.TypeConversionException(e.getMessage());
      }
    }
  }

  /** {@code --warm-up}: off, a number of calls or a duration. */
  static final class WarmUpConverter implements CommandLine.ITypeConverter<WarmUpBudget> {
    private static final String FORMS =
        "use off, a number of calls (e.g. " + WarmUpBudget.DEFAULT + ") or a duration (e.g. 10s)";

    @Override
    public WarmUpBudget convert(String value) {
      String s = value.strip().toLowerCase(java.util.Locale.ROOT);
      if (s.equals("off")) {
        return WarmUpBudget.OFF;
      }
      if (s.matches("\\d{1,9}")) {
        return WarmUpBudget.ofCalls(Long.parseLong(s));
      }
      Duration d;
      try {
        d = DurationParser.parse(s);
      } catch (IllegalArgumentException e) {
        throw new CommandLine.TypeConversionException("'" + value + "' is not a warm-up: " + FORMS);
      }
      if (d.compareTo(WarmUpBudget.MAX_TIME) > 0) {
        throw new CommandLine.TypeConversionException(
            "'"
                + value
                + "' is too long a warm-up: at most "
                + WarmUpBudget.MAX_TIME.toSeconds()
                + "s, or off");
      }
      return WarmUpBudget.ofTime(d);
    }
  }

  /** {@code --log-level}, in any case. */
  static final class LogLevelConverter implements CommandLine.ITypeConverter<LogLevel> {
    @Override
    public LogLevel convert(String value) {
      try {
        return LogLevel.parse(value);
      } catch (IllegalArgumentException e) {
        throw new CommandLine.TypeConversionException(e.getMessage());
      }
    }
  }
}
