package dev.phrony.worker.cli;

import dev.phrony.worker.UserErrorException;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

/**
 * {@code list-handlers --worker URL}: what a running worker serves, from its {@code /handlers}: a
 * {@code run}'s HTTP endpoint, or a {@code dev}'s control address (its embedded worker).
 */
final class WorkerHandlers {
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
              + "): check the address: the HTTP endpoint of a 'run' (its --http), or the control"
              + " address of a 'dev' (its --control-port)",
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
              + "): give a phrony-worker 'run' HTTP endpoint (its --http) or a 'dev' control"
              + " address (its --control-port)");
    }
    return r.body();
  }

  static boolean hasProblems(String json) {
    return LoadReport.tree(json).path("problems").size() > 0;
  }

  /** The JSON as {@code list-handlers} prints a load, with the generation served. */
  static String table(String json) {
    return LoadReport.table(LoadReport.tree(json));
  }
}
