package dev.phrony.worker.cli;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.phrony.worker.HostJson;
import dev.phrony.worker.TextColumns;
import dev.phrony.worker.UserErrorException;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/** {@code list-handlers --worker URL}: what a running worker serves, from its {@code /handlers}. */
final class WorkerHandlers {
  private static final ObjectMapper JSON = HostJson.MAPPER;
  private static final Duration TIMEOUT = Duration.ofSeconds(5);

  private WorkerHandlers() {}

  /** The JSON of {@code GET <url>/handlers}; a user error naming {@code --worker} otherwise. */
  static String fetch(String url) {
    URI uri;
    try {
      String base = url.contains("://") ? url : "http://" + url;
      uri = URI.create(base.replaceAll("/+$", "") + "/handlers");
    } catch (IllegalArgumentException e) {
      throw new UserErrorException(
          "--worker "
              + url
              + ": not a URL ("
              + e.getMessage()
              + "): give the worker's HTTP endpoint, e.g. http://127.0.0.1:9464");
    }
    HttpClient http =
        HttpClient.newBuilder().connectTimeout(TIMEOUT).executor(Runnable::run).build();
    HttpResponse<String> r;
    try {
      r =
          http.send(
              HttpRequest.newBuilder(uri).timeout(TIMEOUT).GET().build(),
              HttpResponse.BodyHandlers.ofString());
    } catch (IOException e) {
      throw new UserErrorException(
          "--worker "
              + url
              + ": no worker answers at "
              + uri
              + " ("
              + e
              + "): check the address of its HTTP endpoint (--http of 'run')",
          e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new UserErrorException("--worker " + url + ": interrupted", e);
    }
    if (r.statusCode() != 200) {
      throw new UserErrorException(
          "--worker "
              + url
              + ": "
              + uri
              + " answered "
              + r.statusCode()
              + " ("
              + r.body().strip()
              + "): is it a phrony-worker 'run' endpoint?");
    }
    return r.body();
  }

  static boolean hasProblems(String json) {
    return tree(json).path("problems").size() > 0;
  }

  /** The JSON as {@code list-handlers} prints a load: a row per handler, then the problems. */
  static String table(String json) {
    JsonNode root = tree(json);
    List<List<String>> rows = new ArrayList<>();
    rows.add(List.of("KEY", "CONTRACT", "MAX", "SIDE EFFECT", "EXECUTION", "PLUGIN"));
    for (JsonNode h : root.path("handlers")) {
      rows.add(
          List.of(
              h.path("key").asText(),
              h.path("contract_version").asText(),
              h.path("max_concurrency").asText(),
              h.path("side_effect_class").asText(),
              h.path("execution").asText(),
              h.path("plugin").asText()));
    }
    StringBuilder out = new StringBuilder();
    TextColumns.append(out, rows);
    out.append('\n')
        .append("generation ")
        .append(root.path("generation").asText())
        .append(", loaded at ")
        .append(root.path("loaded_at").asText())
        .append('\n');
    JsonNode problems = root.path("problems");
    if (problems.size() > 0) {
      out.append('\n').append("problems:\n");
      problems.forEach(
          p ->
              out.append("  ")
                  .append(p.path("plugin").asText())
                  .append(": ")
                  .append(p.path("reason").asText())
                  .append('\n'));
    }
    out.append("image digest: ").append(root.path("image_digest").asText()).append('\n');
    return out.toString();
  }

  private static JsonNode tree(String json) {
    try {
      return JSON.readTree(json);
    } catch (JsonProcessingException e) {
      throw new UserErrorException(
          "--worker: the answer is not JSON ("
              + e.getOriginalMessage()
              + "): is it a phrony-worker 'run' endpoint?",
          e);
    }
  }
}
