package dev.phrony.worker.cli;

import dev.phrony.worker.config.ConfigException;
import dev.phrony.worker.config.ConfigFile;
import dev.phrony.worker.config.HandlerOverrides;
import dev.phrony.worker.config.LayeredDefaults;
import dev.phrony.worker.config.OnOff;
import dev.phrony.worker.config.Settings;
import dev.phrony.worker.config.Source;
import dev.phrony.worker.config.WorkerConfig;
import dev.phrony.worker.config.WorkerConfig.Setting;
import dev.phrony.worker.ops.ListenAddress;
import dev.phrony.worker.transport.BearerToken;
import dev.phrony.worker.transport.Transport;
import dev.phrony.worker.work.WorkOptions;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.ParseResult;

/**
 * Turns the parsed {@link RunOptions} of a command into a checked {@link WorkerConfig}, with the
 * source of every value: the command line where the option was given, else what {@link
 * LayeredDefaults} supplied from the environment or the file, else the default.
 */
final class WorkerSettings {
  /** The bearer token itself, from the environment only (never a flag or a file key). */
  static final String TOKEN_ENV = Settings.ENV_PREFIX + "TOKEN";

  private WorkerSettings() {}

  /**
   * The effective configuration, for showing it (nothing is moved or refused).
   *
   * @throws ConfigException listing every problem, each naming where the value came from
   */
  static WorkerConfig resolve(RunOptions o, CommandSpec spec) {
    return resolve(o, spec, false);
  }

  /**
   * The effective configuration of a worker about to start: its state dir is also made ready to use
   * (moved from the old default of a checkout, refused inside a build output).
   *
   * @throws ConfigException listing every problem, each naming where the value came from
   * @throws dev.phrony.worker.UserErrorException if the state dir cannot be used
   */
  static WorkerConfig resolveForRun(RunOptions o, CommandSpec spec) {
    return resolve(o, spec, true);
  }

  private static WorkerConfig resolve(RunOptions o, CommandSpec spec, boolean forRun) {
    LayeredDefaults layers = spec.defaultValueProvider() instanceof LayeredDefaults d ? d : null;
    List<String> problems = new ArrayList<>();
    Optional<Path> configFile = Optional.empty();
    ConfigFile file = ConfigFile.none();
    if (layers != null) {
      file = layers.file(spec);
      problems.addAll(layers.problems());
      configFile = Optional.ofNullable(file.path()).filter(Files::isRegularFile);
    }
    List<HandlerOverrides.Rule> handlerRules =
        o.handlers.rules(
            file, layers == null ? Optional.empty() : layers.env(HandlerOverrides.ENV), problems);
    ParseResult parsed = spec.commandLine().getParseResult();
    Path pluginsDir = o.plugins.pluginsDir();
    Path stateDir = forRun ? o.stateDir.resolveForUse() : o.stateDir.resolve();
    Map<String, Object> computed =
        Map.of("plugins", pluginsDir.toString(), "state-dir", stateDir.toString());

    List<Setting> settings = new ArrayList<>();
    for (OptionSpec option : Settings.of(spec)) {
      String key = Settings.key(option);
      Source source;
      String text;
      if (parsed != null && parsed.hasMatchedOption(option)) {
        source = Source.flag(option.longestName());
        List<String> given = option.originalStringValues();
        text = given.isEmpty() ? String.valueOf(option.getValue()) : given.getLast();
      } else if (layers != null && layers.supplied(key).isPresent()) {
        LayeredDefaults.Supplied s = layers.supplied(key).get();
        source = s.source();
        text = s.text();
      } else {
        source = Source.byDefault(key);
        text = option.defaultValue();
      }
      Object shown =
          text != null
              ? typed(option, text)
              : Settings.isBoolean(option) ? Boolean.FALSE : computed.get(key);
      settings.add(new Setting(key, Settings.envName(option), shown, source));
    }
    Function<String, Source> sourceOf =
        key ->
            settings.stream()
                .filter(s -> s.key().equals(key))
                .findFirst()
                .map(Setting::source)
                .orElse(Source.byDefault(key));
    Function<String, String> origin = key -> WorkerConfig.origin(key, sourceOf.apply(key));

    // The bearer token: --token-file (flag) > $PHRONY_WORKER_TOKEN > token-file (env, file).
    Optional<String> envToken = layers == null ? Optional.empty() : layers.env(TOKEN_ENV);
    Optional<BearerToken> token = Optional.empty();
    String tokenOrigin = origin.apply("token-file");
    Source tokenFileSource = sourceOf.apply("token-file");
    if (o.tokenFile != null && (tokenFileSource.kind() == Source.Kind.FLAG || envToken.isEmpty())) {
      token = Optional.of(BearerToken.fromFile(o.tokenFile));
    } else if (envToken.isPresent()) {
      if (tokenFileSource.kind() == Source.Kind.ENV) {
        problems.add(TOKEN_ENV + " and " + tokenFileSource.origin() + " are both set: keep one");
      }
      try {
        token = Optional.of(BearerToken.of(envToken.get()));
      } catch (IllegalArgumentException e) {
        problems.add(TOKEN_ENV + ": " + e.getMessage());
      }
      tokenOrigin = TOKEN_ENV;
      settings.add(new Setting("token", TOKEN_ENV, WorkerConfig.REDACTED, Source.env(TOKEN_ENV)));
    }
    if (token.isPresent()) {
      try {
        token.get().value();
      } catch (IOException e) {
        problems.add(tokenOrigin + ": cannot read the token: " + e.getMessage());
      }
    }

    boolean tls = o.tls || o.tlsCa != null || o.tlsCert != null || o.tlsKey != null;
    readable(o.tlsCa, origin.apply("tls-ca"), problems);
    readable(o.tlsCert, origin.apply("tls-cert"), problems);
    readable(o.tlsKey, origin.apply("tls-key"), problems);
    if ((o.tlsCert == null) != (o.tlsKey == null)) {
      problems.add(
          o.tlsCert != null
              ? origin.apply("tls-cert") + ": a client certificate needs its key: set tls-key too"
              : origin.apply("tls-key") + ": a client key needs its certificate: set tls-cert too");
    }
    if (token.isPresent() && !tls && !o.allowInsecureToken) {
      problems.add(
          tokenOrigin
              + ": a bearer token is only sent over TLS: turn on TLS (--tls),"
              + " or allow plaintext with --allow-insecure-token when the hop is trusted (a"
              + " sidecar on localhost)");
    }
    runtimeAddressProblem(o.runtime)
        .ifPresent(p -> problems.add(origin.apply("runtime") + ": " + p));
    if (o.maxResultSize < 1 || o.maxResultSize > WorkOptions.DEFAULT_MAX_RESULT_BYTES) {
      problems.add(
          origin.apply("max-result-size")
              + ": "
              + o.maxResultSize
              + " is out of range: between 1 and "
              + WorkOptions.DEFAULT_MAX_RESULT_BYTES
              + " bytes (the runtime accepts messages up to 4 MiB)");
    }
    if (o.maxInboundSize < WorkOptions.RUNTIME_MAX_MESSAGE_BYTES) {
      problems.add(
          origin.apply("max-inbound-size")
              + ": "
              + o.maxInboundSize
              + " is too small: at least "
              + WorkOptions.RUNTIME_MAX_MESSAGE_BYTES
              + " bytes (4 MiB)");
    }
    if (o.maxRunawayHandlers < 0) {
      problems.add(
          settings.stream()
                  .filter(x -> x.key().equals("max-runaway-handlers"))
                  .findFirst()
                  .map(x -> WorkerConfig.origin(x.key(), x.source()))
                  .orElse("--max-runaway-handlers")
              + ": "
              + o.maxRunawayHandlers
              + " is negative: use 0 or more");
    }
    if (o.maxLeakedLoaders < 1) {
      problems.add(
          origin.apply("max-leaked-loaders")
              + ": "
              + o.maxLeakedLoaders
              + " is too small: use 1 or more");
    }
    Optional<Boolean> watchSetting = OnOff.parse(o.watchPlugins == null ? "on" : o.watchPlugins);
    if (watchSetting.isEmpty()) {
      problems.add(
          origin.apply("watch-plugins") + ": '" + o.watchPlugins + "' is neither on nor off");
    }
    boolean watch = watchSetting.orElse(true);
    if (!problems.isEmpty()) {
      throw new ConfigException(problems);
    }
    Transport transport =
        new Transport(
            tls,
            Optional.ofNullable(o.tlsCa),
            Optional.ofNullable(o.tlsCert),
            Optional.ofNullable(o.tlsKey),
            token,
            o.allowInsecureToken);
    return new WorkerConfig(
        pluginsDir,
        o.plugins.strict(),
        watch,
        stateDir,
        o.durability,
        o.orphanRetention,
        o.runtime,
        nonBlank(o.workerId),
        nonBlank(o.workloadIdentity),
        nonBlank(o.imageDigest),
        o.drainTimeout,
        o.maxResultSize,
        o.maxInboundSize,
        o.exposeInternalErrors,
        o.maxRunawayHandlers,
        o.maxLeakedLoaders,
        o.warmUp,
        Optional.ofNullable(o.keepalive),
        ListenAddress.parse(o.http),
        o.logFormat,
        o.logLevel,
        transport,
        handlerRules,
        configFile,
        settings);
  }

  private static Object typed(OptionSpec option, String text) {
    if (Settings.isBoolean(option)) {
      return Boolean.parseBoolean(text);
    }
    if (Settings.isInteger(option)) {
      try {
        return Long.parseLong(text);
      } catch (NumberFormatException e) {
        return text;
      }
    }
    return text;
  }

  private static void readable(Path file, String origin, List<String> problems) {
    if (file != null && !Files.isReadable(file)) {
      problems.add(
          origin + ": " + file + (Files.exists(file) ? " cannot be read" : " does not exist"));
    }
  }

  /**
   * Why {@code text} is not a runtime address ({@code HOST:PORT}, {@code [IPv6]:PORT}, or a gRPC
   * target such as {@code dns:///host:port}), if it is not: caught here, at start, rather than as a
   * stack trace of the first connect.
   */
  static Optional<String> runtimeAddressProblem(String text) {
    String fix = ": use HOST:PORT with a port from 1 to 65535, e.g. 127.0.0.1:7777";
    if (text == null || text.isBlank()) {
      return Optional.of("empty" + fix);
    }
    if (text.contains(":/")) {
      return Optional.empty(); // a gRPC target URI: the channel resolves it
    }
    int colon = text.lastIndexOf(':');
    String host = colon < 0 ? "" : text.substring(0, colon);
    if (colon < 0
        || host.isEmpty()
        || host.equals("[]")
        || (host.contains(":") && !(host.startsWith("[") && host.endsWith("]")))) {
      return Optional.of(
          "'"
              + text
              + "' is not HOST:PORT"
              + fix
              + " (an IPv6 address goes in brackets: [::1]:7777)");
    }
    String port = text.substring(colon + 1);
    int n;
    try {
      n = Integer.parseInt(port);
    } catch (NumberFormatException e) {
      return Optional.of("'" + port + "' in '" + text + "' is not a port" + fix);
    }
    if (n < 1 || n > 65_535) {
      return Optional.of("port " + n + " in '" + text + "' is out of range" + fix);
    }
    return Optional.empty();
  }

  private static Optional<String> nonBlank(String s) {
    return s == null || s.isBlank() ? Optional.empty() : Optional.of(s.strip());
  }
}
