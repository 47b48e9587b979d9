package dev.phrony.worker.dist;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import dev.phrony.worker.HostVersion;
import dev.phrony.worker.cli.PhronyWorkerCommand;
import dev.phrony.worker.config.DurationParser;
import dev.phrony.worker.work.WorkOptions;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * {@code deploy/} agrees with the host and the distribution: ports, probe paths, timeouts, the
 * image's entrypoint, and the selectors and targets that tie the Kubernetes objects together.
 */
class DeployIT {
  private static final Path DEPLOY = Path.of("..", "deploy").toAbsolutePath().normalize();
  private static final String INSTALL_DIR = "/opt/phrony-worker";

  static JsonNode deployment;
  static JsonNode pdb;
  static JsonNode hpa;
  static Containerfile image;

  @BeforeAll
  static void read() throws IOException {
    deployment = yaml("kubernetes/deployment.yaml");
    pdb = yaml("kubernetes/poddisruptionbudget.yaml");
    hpa = yaml("kubernetes/horizontalpodautoscaler.yaml");
    image = Containerfile.parse(Files.readString(DEPLOY.resolve("Containerfile")));
  }

  private static JsonNode yaml(String file) throws IOException {
    List<JsonNode> docs =
        new YAMLMapper()
            .readerFor(JsonNode.class)
            .<JsonNode>readValues(DEPLOY.resolve(file).toFile())
            .readAll();
    assertThat(docs).as(file).hasSize(1);
    return docs.getFirst();
  }

  private static JsonNode container() {
    JsonNode containers = deployment.at("/spec/template/spec/containers");
    assertThat(containers.size()).isEqualTo(1);
    return containers.get(0);
  }

  private static List<String> args() {
    List<String> args = new ArrayList<>();
    container().path("args").forEach(a -> args.add(a.asText()));
    return args;
  }

  /** The value of {@code --name VALUE} or {@code --name=VALUE} in the container's args. */
  private static Optional<String> arg(String name) {
    List<String> args = args();
    for (int i = 0; i < args.size(); i++) {
      if (args.get(i).equals(name) && i + 1 < args.size()) {
        return Optional.of(args.get(i + 1));
      }
      if (args.get(i).startsWith(name + "=")) {
        return Optional.of(args.get(i).substring(name.length() + 1));
      }
    }
    return Optional.empty();
  }

  private static int httpPort() {
    String http =
        arg("--http")
            .orElseThrow(
                () ->
                    new AssertionError(
                        "the worker's args must "
                            + "set --http: the host's default 127.0.0.1 is unreachable from the kubelet"));
    assertThat(http).as("--http listens on all interfaces").startsWith("0.0.0.0:");
    return Integer.parseInt(http.substring(http.lastIndexOf(':') + 1));
  }

  /** A probe's port: a number, or the name of a container port. */
  private static int port(JsonNode probe) {
    JsonNode port = probe.at("/httpGet/port");
    if (port.isInt()) {
      return port.asInt();
    }
    for (JsonNode p : container().path("ports")) {
      if (p.path("name").asText().equals(port.asText())) {
        return p.path("containerPort").asInt();
      }
    }
    throw new AssertionError("probe port " + port + " names no container port");
  }

  @Test
  void probes_use_the_http_port_and_the_health_paths() {
    int port = httpPort();
    JsonNode c = container();

    assertThat(c.at("/livenessProbe/httpGet/path").asText()).isEqualTo("/healthz");
    assertThat(c.at("/readinessProbe/httpGet/path").asText()).isEqualTo("/readyz");
    assertThat(port(c.get("livenessProbe"))).isEqualTo(port);
    assertThat(port(c.get("readinessProbe"))).isEqualTo(port);
    if (c.has("startupProbe")) {
      assertThat(c.at("/startupProbe/httpGet/path").asText()).isEqualTo("/healthz");
      assertThat(port(c.get("startupProbe"))).isEqualTo(port);
    }
    assertThat(c.path("ports"))
        .anySatisfy(p -> assertThat(p.path("containerPort").asInt()).isEqualTo(port));
    assertThat(deployment.at("/spec/template/metadata/annotations/prometheus.io~1port").asText())
        .isEqualTo(Integer.toString(port));
    assertThat(image.all("EXPOSE")).contains(Integer.toString(port));
  }

  @Test
  void the_grace_period_outlasts_the_drain() {
    Duration drain =
        arg("--drain-timeout").map(DurationParser::parse).orElse(WorkOptions.DEFAULT_DRAIN_TIMEOUT);
    Duration grace =
        Duration.ofSeconds(
            deployment.at("/spec/template/spec/terminationGracePeriodSeconds").asLong(30));

    assertThat(grace).isGreaterThan(drain).isGreaterThan(WorkOptions.DEFAULT_DRAIN_TIMEOUT);
  }

  @Test
  void the_args_are_accepted_by_run() {
    CommandLine cli = PhronyWorkerCommand.newCommandLine();
    List<String> args = new ArrayList<>(List.of("run"));
    args.addAll(args());

    cli.parseArgs(args.toArray(String[]::new)); // throws on an unknown option or a bad value
  }

  @Test
  void the_worker_id_is_the_pod_name_and_the_runtime_is_named() {
    Map<String, JsonNode> env = new LinkedHashMap<>();
    container().path("env").forEach(e -> env.put(e.path("name").asText(), e));

    assertThat(env.get("WORKER_ID").at("/valueFrom/fieldRef/fieldPath").asText())
        .isEqualTo("metadata.name");
    assertThat(env.get("PHRONY_RUNTIME_ADDR").path("value").asText()).matches(".+:\\d+");
  }

  @Test
  void the_entrypoint_runs_the_distributions_launcher() throws IOException {
    assertThat(image.last("FROM")).isEqualTo("eclipse-temurin:25-jre");
    assertThat(image.all("RUN"))
        .as("the AOT cache trained on the image's own JRE")
        .anyMatch(
            r -> r.contains("dev.phrony.worker.testkit.training.CacheTraining " + INSTALL_DIR));
    // exec form (a JSON array), so that the JVM is PID 1 and gets SIGTERM
    List<String> entrypoint = new ArrayList<>();
    new ObjectMapper().readTree(image.last("ENTRYPOINT")).forEach(e -> entrypoint.add(e.asText()));
    assertThat(entrypoint).containsExactly(INSTALL_DIR + "/bin/phrony-worker", "run");

    // ADD unpacks the tarball into /opt/; its top folder is phrony-worker/.
    String version = image.arg("PHRONY_WORKER_VERSION").orElseThrow();
    assertThat(version)
        .as("ARG PHRONY_WORKER_VERSION is the project version")
        .isEqualTo(HostVersion.get());
    assertThat(image.all("ADD"))
        .contains("dist/target/phrony-worker-${PHRONY_WORKER_VERSION}.tar.gz /opt/");
    assertThat(Path.of("target", "phrony-worker-" + version + ".tar.gz")).isRegularFile();
    assertThat(DistProcess.distDir().getFileName().toString())
        .isEqualTo(Path.of(INSTALL_DIR).getFileName().toString());
    Path launcher = DistProcess.distDir().resolve("bin/phrony-worker");
    assertThat(launcher).isRegularFile().isExecutable();
  }

  @Test
  void the_image_runs_as_the_pods_non_root_user_with_state_on_the_mounted_volume() {
    String user = image.last("USER");
    assertThat(user).doesNotStartWith("0").doesNotStartWith("root");
    JsonNode security = deployment.at("/spec/template/spec/securityContext");
    assertThat(security.path("runAsNonRoot").asBoolean()).isTrue();
    assertThat(user)
        .isEqualTo(
            security.path("runAsUser").asText() + ":" + security.path("runAsGroup").asText());

    String volume = image.last("VOLUME");
    String stateDir = image.env("PHRONY_WORKER_STATE_DIR").orElseThrow();
    assertThat(Path.of(stateDir))
        .as("the state dir is a folder in the volume")
        .startsWithRaw(Path.of(volume))
        .isNotEqualTo(Path.of(volume));
    assertThat(container().path("volumeMounts"))
        .anySatisfy(m -> assertThat(m.path("mountPath").asText()).isEqualTo(volume));
  }

  @Test
  void the_disruption_budget_selects_the_deployments_pods() {
    JsonNode labels = deployment.at("/spec/template/metadata/labels");
    JsonNode selector = pdb.at("/spec/selector/matchLabels");

    assertThat(selector.isEmpty()).isFalse();
    selector
        .properties()
        .forEach(
            e ->
                assertThat(labels.path(e.getKey()).asText())
                    .as("pod label %s", e.getKey())
                    .isEqualTo(e.getValue().asText()));
    assertThat(deployment.at("/spec/selector/matchLabels")).isEqualTo(selector);
  }

  @Test
  void the_autoscaler_targets_the_deployment_on_the_documented_metric() throws IOException {
    JsonNode target = hpa.at("/spec/scaleTargetRef");
    assertThat(target.path("apiVersion").asText()).isEqualTo("apps/v1");
    assertThat(target.path("kind").asText()).isEqualTo("Deployment");
    assertThat(target.path("name").asText()).isEqualTo(deployment.at("/metadata/name").asText());

    JsonNode metric = hpa.at("/spec/metrics/0");
    assertThat(metric.path("type").asText()).isEqualTo("Pods");
    String name = metric.at("/pods/metric/name").asText();
    assertThat(name).isEqualTo("phrony_worker_slots_in_use_ratio");
    assertThat(Files.readString(DEPLOY.resolve("README.md")))
        .as("deploy/README.md documents the metric as the contract")
        .contains("`" + name + "`");
  }

  /** The instructions of a Containerfile (Dockerfile syntax), continuation lines joined. */
  record Containerfile(List<Map.Entry<String, String>> instructions) {
    private static final Pattern INSTRUCTION = Pattern.compile("(?s)([A-Za-z]+)\\s+(.*)");

    static Containerfile parse(String text) {
      List<Map.Entry<String, String>> out = new ArrayList<>();
      StringBuilder current = new StringBuilder();
      for (String line : text.lines().toList()) {
        String l = line.strip();
        if (current.isEmpty() && (l.isEmpty() || l.startsWith("#"))) {
          continue;
        }
        if (l.startsWith("#")) {
          continue; // a comment inside a continued instruction
        }
        if (l.endsWith("\\")) {
          current.append(l, 0, l.length() - 1).append(' ');
          continue;
        }
        current.append(l);
        Matcher m = INSTRUCTION.matcher(current.toString().strip());
        if (!m.matches()) {
          throw new AssertionError("not an instruction: " + current);
        }
        out.add(Map.entry(m.group(1).toUpperCase(Locale.ROOT), m.group(2).strip()));
        current.setLength(0);
      }
      return new Containerfile(out);
    }

    List<String> all(String instruction) {
      return instructions.stream()
          .filter(e -> e.getKey().equals(instruction))
          .map(Map.Entry::getValue)
          .toList();
    }

    String last(String instruction) {
      List<String> all = all(instruction);
      assertThat(all).as(instruction).isNotEmpty();
      return all.getLast();
    }

    /** The default of {@code ARG name=default}. */
    Optional<String> arg(String name) {
      return all("ARG").stream()
          .filter(a -> a.startsWith(name + "="))
          .map(a -> a.substring(name.length() + 1))
          .findFirst();
    }

    /** The value of {@code ENV name=value}. */
    Optional<String> env(String name) {
      return all("ENV").stream()
          .filter(a -> a.startsWith(name + "="))
          .map(a -> a.substring(name.length() + 1))
          .findFirst();
    }
  }
}
