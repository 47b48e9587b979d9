package dev.phrony.worker.dev;

import com.fasterxml.jackson.databind.JsonNode;
import dev.phrony.worker.SyntaxException;
import dev.phrony.worker.UserErrorException;
import java.io.IOException;
import java.net.ConnectException;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.channels.UnresolvedAddressException;
import java.time.Duration;
import java.util.Objects;

/**
 * Talks to the control surface of a running {@code phrony-worker dev} (see
 * {@link ControlServer}).
 */
public final class ControlClient {

  /** Where {@code dev} serves its control API unless told otherwise. */
  public static final String DEFAULT_URL = "http://127.0.0.1:7778";
  /** Names the control address for {@code call} when {@code --control} is not given. */
  public static final String ENV_CONTROL = "PHRONY_WORKER_CONTROL";

  private static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(5);
  /** How long a call without a deadline may take: far beyond dev's own bound on it. */
  private static final Duration DEFAULT_WAIT = Duration.ofMinutes(5);
  /** On top of a call's deadline: dev's grace, plus the time to answer. */
  private static final Duration DEADLINE_SLACK = Duration.ofSeconds(30);

  private final URI base;
  private final HttpClient http;

  private ControlClient(URI base) {
    this.base = base;
    this.http = HttpClient.newBuilder().connectTimeout(CONNECT_TIMEOUT)
        .version(HttpClient.Version.HTTP_1_1).build();
  }

  /**
   * A client for {@code url} ({@code http://host:port}; {@code host:port} is read as http).
   *
   * @throws UserErrorException when it is not such an address
   */
  public static ControlClient of(String url) {
    Objects.requireNonNull(url, "url");
    String s = url.strip();
    if (!s.contains("://")) {
      s = "http://" + s;
    }
    URI uri;
    try {
      uri = new URI(s);
    } catch (URISyntaxException e) {
      throw new UserErrorException("control address '" + url + "' is not a URL like "
          + DEFAULT_URL, e);
    }
    if (!"http".equals(uri.getScheme()) || uri.getHost() == null || uri.getPort() < 0
        || (uri.getRawPath() != null && !uri.getRawPath().isEmpty()
            && !uri.getRawPath().equals("/"))) {
      throw new UserErrorException("control address '" + url + "' is not an address like "
          + DEFAULT_URL + " (http, a host and a port, no path)");
    }
    return new ControlClient(URI.create("http://" + uri.getRawAuthority()));
  }

  /** {@code http://host:port}. */
  public String url() {
    return base.toString();
  }

  /**
   * Submits a call and waits for its outcome.
   *
   * @throws ControlUnreachableException when no {@code dev} answers at this address
   * @throws ControlRequestException when {@code dev} refuses the request
   */
  public CallReply call(CallRequest request) {
    Duration wait = request.deadline() == null ? DEFAULT_WAIT
        : request.deadline().plus(DEADLINE_SLACK);
    HttpRequest http = HttpRequest.newBuilder(base.resolve("/v1/calls"))
        .timeout(wait)
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofByteArray(request.toJson()))
        .build();
    JsonNode json = send(http, wait);
    try {
      return CallReply.fromJson(json);
    } catch (IllegalArgumentException e) {
      throw notDev("its answer is not a call outcome");
    }
  }

  /** {@code GET path}: the answer's JSON. */
  public JsonNode get(String path) {
    return send(HttpRequest.newBuilder(base.resolve(path)).timeout(CONNECT_TIMEOUT.multipliedBy(2))
        .GET().build(), CONNECT_TIMEOUT.multipliedBy(2));
  }

  private JsonNode send(HttpRequest request, Duration wait) {
    HttpResponse<byte[]> response;
    try {
      response = http.send(request, HttpResponse.BodyHandlers.ofByteArray());
    } catch (HttpConnectTimeoutException e) {
      throw unreachable("no answer to connect within " + CONNECT_TIMEOUT.toSeconds() + " s");
    } catch (HttpTimeoutException e) {
      throw new ControlUnreachableException("phrony-worker dev at " + url()
          + " gave no answer within " + CallService.human(wait));
    } catch (ConnectException | UnresolvedAddressException e) {
      throw unreachable(e.getMessage() == null || e.getMessage().isBlank()
          ? "connection refused" : e.getMessage());
    } catch (IOException e) {
      if (e.getCause() instanceof ConnectException || e.getCause() instanceof
          UnresolvedAddressException) {
        throw unreachable("connection refused");
      }
      throw new ControlUnreachableException("phrony-worker dev at " + url()
          + " broke off the request: " + e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new ControlUnreachableException("interrupted while waiting for " + url());
    }
    JsonNode json;
    try {
      json = Json.parse(response.body());
    } catch (SyntaxException e) {
      throw notDev("it answered HTTP " + response.statusCode() + " without JSON");
    }
    int status = response.statusCode();
    if (status == 200) {
      return json;
    }
    JsonNode error = json.path("error");
    if (!error.isObject()) {
      throw notDev("it answered HTTP " + status);
    }
    String code = error.path("code").asText();
    String message = error.path("message").asText();
    if (status == 503) {
      throw new ControlUnreachableException("phrony-worker dev at " + url() + ": " + message);
    }
    throw new ControlRequestException(status, code, message);
  }

  private ControlUnreachableException unreachable(String why) {
    return new ControlUnreachableException("cannot reach phrony-worker dev at " + url() + " ("
        + why + "): start it with 'bin/phrony-worker dev' in another terminal, or give its "
        + "control address with --control or $" + ENV_CONTROL);
  }

  private ControlUnreachableException notDev(String why) {
    return new ControlUnreachableException(url() + " does not look like phrony-worker dev's "
        + "control address (" + why + "): start 'bin/phrony-worker dev', or give its control "
        + "address with --control or $" + ENV_CONTROL);
  }
}
