package dev.phrony.worker.dev;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.phrony.worker.SyntaxException;
import dev.phrony.worker.UserErrorException;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.ConnectException;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.channels.UnresolvedAddressException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Objects;

/**
 * Talks to the control surface of a running {@code phrony-worker dev} (see {@link ControlServer}).
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
    this.http =
        HttpClient.newBuilder()
            .connectTimeout(CONNECT_TIMEOUT)
            .version(HttpClient.Version.HTTP_1_1)
            .build();
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
      throw new UserErrorException(
          "control address '" + url + "' is not a URL like " + DEFAULT_URL, e);
    }
    if (!"http".equals(uri.getScheme())
        || uri.getHost() == null
        || uri.getPort() < 0
        || (uri.getRawPath() != null
            && !uri.getRawPath().isEmpty()
            && !uri.getRawPath().equals("/"))) {
      throw new UserErrorException(
          "control address '"
              + url
              + "' is not an address like "
              + DEFAULT_URL
              + " (http, a host and a port, no path)");
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
    Duration wait =
        request.deadline() == null ? DEFAULT_WAIT : request.deadline().plus(DEADLINE_SLACK);
    HttpRequest http =
        HttpRequest.newBuilder(base.resolve("/v1/calls"))
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
    return send(
        HttpRequest.newBuilder(base.resolve(path))
            .timeout(CONNECT_TIMEOUT.multipliedBy(2))
            .GET()
            .build(),
        CONNECT_TIMEOUT.multipliedBy(2));
  }

  /** {@code GET /v1/approvals}: the calls held for approval, and dev's approval policy. */
  public JsonNode approvals() {
    return get("/v1/approvals");
  }

  /**
   * Answers an approval ({@code POST /v1/approvals/{id}}).
   *
   * @param args replacement arguments (JSON) for an approval, or null for none
   * @return the answer: {@code decision}, {@code call_id}, {@code args_replaced}...
   * @throws ControlRequestException when dev refuses it: no such approval waiting (404), arguments
   *     that break the handler's input schema (422, the message names the pointer)
   */
  public JsonNode answer(String approvalId, boolean approved, String comment, String args) {
    ObjectNode body = Json.object();
    body.put("approved", approved);
    if (comment != null) {
      body.put("comment", comment);
    }
    if (args != null) {
      body.set("args", Json.parse(args));
    }
    Duration wait = CONNECT_TIMEOUT.multipliedBy(2);
    return send(
        HttpRequest.newBuilder(base.resolve("/v1/approvals/" + segment(approvalId)))
            .timeout(wait)
            .header("Content-Type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofByteArray(Json.bytes(body)))
            .build(),
        wait);
  }

  /**
   * The events of a session ({@code GET /v1/sessions/{id}/events}), one JSON object per line: those
   * after event {@code after}, and with {@code follow} every new one until the stream is closed or
   * dev stops. Returns once dev has answered with its headers: with {@code follow}, no event of the
   * session after that is missed.
   *
   * @throws ControlRequestException for an unknown session without {@code follow} (404)
   */
  public EventStream events(String sessionId, long after, boolean follow) {
    URI uri =
        base.resolve(
            "/v1/sessions/" + segment(sessionId) + "/events?after=" + after + "&follow=" + follow);
    HttpRequest.Builder request = HttpRequest.newBuilder(uri).GET();
    if (!follow) {
      request.timeout(CONNECT_TIMEOUT.multipliedBy(2));
    }
    HttpResponse<InputStream> response =
        exchange(
            request.build(),
            HttpResponse.BodyHandlers.ofInputStream(),
            CONNECT_TIMEOUT.multipliedBy(2));
    if (response.statusCode() != 200) {
      try (InputStream in = response.body()) {
        check(response.statusCode(), in.readAllBytes());
      } catch (IOException e) {
        throw new ControlUnreachableException(
            "phrony-worker dev at " + url() + " broke off the request: " + e);
      }
    }
    return new EventStream(
        new BufferedReader(new InputStreamReader(response.body(), StandardCharsets.UTF_8)));
  }

  /** A session's events as they arrive; close it to stop following. */
  public static final class EventStream implements AutoCloseable {
    private final BufferedReader lines;

    private EventStream(BufferedReader lines) {
      this.lines = lines;
    }

    /** The next event, one line of JSON, waiting for it; null at the end of the stream. */
    public String next() {
      try {
        String line;
        while ((line = lines.readLine()) != null && line.isBlank()) {
          // a keepalive
        }
        return line;
      } catch (IOException e) {
        return null; // closed, or dev went away: the stream is over either way
      }
    }

    @Override
    public void close() {
      try {
        lines.close();
      } catch (IOException e) {
        // nothing to release beyond the connection
      }
    }
  }

  /** A path segment, percent-encoded. */
  private static String segment(String s) {
    return URLEncoder.encode(s, StandardCharsets.UTF_8).replace("+", "%20");
  }

  private JsonNode send(HttpRequest request, Duration wait) {
    HttpResponse<byte[]> response =
        exchange(request, HttpResponse.BodyHandlers.ofByteArray(), wait);
    return check(response.statusCode(), response.body());
  }

  private <T> HttpResponse<T> exchange(
      HttpRequest request, HttpResponse.BodyHandler<T> body, Duration wait) {
    try {
      return http.send(request, body);
    } catch (HttpConnectTimeoutException e) {
      throw unreachable("no answer to connect within " + CONNECT_TIMEOUT.toSeconds() + " s");
    } catch (HttpTimeoutException e) {
      throw new ControlUnreachableException(
          "phrony-worker dev at " + url() + " gave no answer within " + CallService.human(wait));
    } catch (ConnectException | UnresolvedAddressException e) {
      throw unreachable(
          e.getMessage() == null || e.getMessage().isBlank()
              ? "connection refused"
              : e.getMessage());
    } catch (IOException e) {
      if (e.getCause() instanceof ConnectException
          || e.getCause() instanceof UnresolvedAddressException) {
        throw unreachable("connection refused");
      }
      throw new ControlUnreachableException(
          "phrony-worker dev at " + url() + " broke off the request: " + e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new ControlUnreachableException("interrupted while waiting for " + url());
    }
  }

  /** The JSON of a 200 answer; otherwise the refusal it carries, as an exception. */
  private JsonNode check(int status, byte[] body) {
    JsonNode json;
    try {
      json = Json.parse(body);
    } catch (SyntaxException e) {
      throw notDev("it answered HTTP " + status + " without JSON");
    }
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
    return new ControlUnreachableException(
        "cannot reach phrony-worker dev at "
            + url()
            + " ("
            + why
            + "): start it with 'bin/phrony-worker dev' in another terminal, or give its "
            + "control address with --control or $"
            + ENV_CONTROL);
  }

  private ControlUnreachableException notDev(String why) {
    return new ControlUnreachableException(
        url()
            + " does not look like phrony-worker dev's "
            + "control address ("
            + why
            + "): start 'bin/phrony-worker dev', or give its control "
            + "address with --control or $"
            + ENV_CONTROL);
  }
}
