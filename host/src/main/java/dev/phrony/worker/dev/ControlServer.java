package dev.phrony.worker.dev;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.phrony.worker.SyntaxException;
import dev.phrony.worker.testkit.LocalRuntime;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.BindException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The control surface of {@code phrony-worker dev}: JSON over HTTP on loopback only.
 *
 * <pre>
 * POST /v1/calls                   submit a call ({@link CallRequest}), get its outcome
 *                                  ({@link CallReply})
 * POST /v1/sessions/{id}/cancel    cancel a session's calls in flight
 * GET  /v1/sessions/{id}/events    the session's tool_call, approval_required and tool_result
 *                                  events, one JSON object per line; ?after=SEQ skips those up
 *                                  to SEQ, ?follow=true stays open and streams new ones (and an
 *                                  empty line after 15 s without one)
 * GET  /v1/approvals               calls held for approval, oldest first
 * POST /v1/approvals/{id}          answer one: {"approved": true|false, "comment": "...",
 *                                  "args": {...}} (args replace the proposed arguments)
 * GET  /v1/workers                 the runtime's registrations and their slots
 * GET  /v1/queues                  calls waiting for a slot, by tool@version
 * GET  /handlers                   what dev's worker serves: {@code run}'s {@code /handlers}
 * GET  /healthz                    200 while serving, 503 while stopping
 * </pre>
 *
 * <p>A call's outcome, whichever it is, is a 200 answer: the request did what it asked. A request
 * that cannot be served gets a 4xx (or 503) answer with {@code {"error": {"code": "...", "message":
 * "..."}}}. Each request runs on its own virtual thread, so a call waiting for its outcome holds
 * nothing else up.
 */
public final class ControlServer implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(ControlServer.class);

  /** The largest request body: the worker's own inbound limit (64 MiB). */
  static final int MAX_BODY_BYTES = 64 * 1024 * 1024;

  static final String ENDPOINTS =
      "POST /v1/calls, POST /v1/sessions/{id}/cancel, "
          + "GET /v1/sessions/{id}/events, GET /v1/approvals, POST /v1/approvals/{id}, "
          + "GET /v1/workers, GET /v1/queues, GET /handlers, GET /healthz";

  /** How long a followed session stream stays silent before an empty line checks the client. */
  static final Duration KEEPALIVE = Duration.ofSeconds(15);

  private static final byte[] NEWLINE = {'\n'};
  private static final List<String> ANSWER_FIELDS = List.of("approved", "comment", "args");
  private static final List<String> EVENTS_PARAMS = List.of("after", "follow");

  private final HttpServer server;
  private final ExecutorService executor;
  private final CallService calls;
  private final LocalRuntime runtime;
  private final SessionEvents sessions;
  private volatile boolean stopping;
  private volatile Supplier<String> handlers;

  private ControlServer(
      HttpServer server,
      ExecutorService executor,
      CallService calls,
      LocalRuntime runtime,
      SessionEvents sessions) {
    this.server = server;
    this.executor = executor;
    this.calls = calls;
    this.runtime = runtime;
    this.sessions = sessions;
  }

  /**
   * Serves on {@code 127.0.0.1:port} (0 picks a free port), with the session streams of {@code
   * sessions} (which must hear the calls of {@code calls}).
   *
   * @throws BindException when the port is in use
   */
  public static ControlServer start(
      int port, CallService calls, LocalRuntime runtime, SessionEvents sessions)
      throws IOException {
    Objects.requireNonNull(calls, "calls");
    Objects.requireNonNull(runtime, "runtime");
    Objects.requireNonNull(sessions, "sessions");
    HttpServer server =
        HttpServer.create(
            new InetSocketAddress(InetAddress.getByAddress(new byte[] {127, 0, 0, 1}), port), 0);
    ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor();
    ControlServer control = new ControlServer(server, executor, calls, runtime, sessions);
    server.setExecutor(executor);
    server.createContext("/", control::handle);
    server.start();
    log.info("control API listening on {}", control.url());
    return control;
  }

  public int port() {
    return server.getAddress().getPort();
  }

  /** {@code http://127.0.0.1:port}. */
  public String url() {
    return "http://127.0.0.1:" + port();
  }

  /** Where {@code GET /handlers} comes from: the JSON of what dev's worker serves now. */
  public void handlersFrom(Supplier<String> json) {
    handlers = Objects.requireNonNull(json, "json");
  }

  /** From now on new calls are refused (503) and {@code /healthz} says stopping. */
  public void refuseNewCalls() {
    stopping = true;
  }

  /** Stops listening; requests still running get up to {@code grace} to finish. */
  public void stop(Duration grace) {
    stopping = true;
    server.stop((int) Math.max(0, Math.min(grace.toSeconds(), Integer.MAX_VALUE)));
    executor.shutdownNow();
  }

  @Override
  public void close() {
    stop(Duration.ZERO);
  }

  // ---- routing ----

  private record Response(int status, JsonNode body, Map<String, String> headers) {
    Response(int status, JsonNode body) {
      this(status, body, Map.of());
    }
  }

  /** A request that cannot be served as sent. */
  private static final class Refusal extends RuntimeException {
    private static final long serialVersionUID = 1L;
    final transient Response response;

    Refusal(int status, String code, String message) {
      this(status, code, message, Map.of());
    }

    Refusal(int status, String code, String message, Map<String, String> headers) {
      super(message, null, false, false);
      this.response = new Response(status, error(code, message), headers);
    }
  }

  private void handle(HttpExchange x) {
    Response r;
    try {
      Optional<String> session = eventsOf(x.getRequestURI().getRawPath());
      if (session.isPresent()) {
        only(x.getRequestMethod(), "GET");
        events(x, session.get());
        return;
      }
      r = route(x);
    } catch (Refusal e) {
      r = e.response;
    } catch (RuntimeException | IOException e) {
      log.error("control API: {} {} failed", x.getRequestMethod(), x.getRequestURI(), e);
      r = new Response(500, error("internal", "the request failed: " + e + " (see the dev log)"));
    }
    send(x, r);
  }

  private Response route(HttpExchange x) throws IOException {
    String method = x.getRequestMethod();
    String path = x.getRequestURI().getRawPath();
    log.debug("control API: {} {}", method, path);
    switch (path) {
      case "/healthz" -> {
        only(method, "GET");
        return health();
      }
      case "/v1/calls" -> {
        only(method, "POST");
        return call(body(x));
      }
      case "/v1/workers" -> {
        only(method, "GET");
        return workers();
      }
      case "/v1/queues" -> {
        only(method, "GET");
        return queues();
      }
      case "/handlers" -> {
        only(method, "GET");
        return handlers();
      }
      default -> {
        List<String> parts = List.of(path.split("/", -1));
        // "", "v1", "sessions", id, "cancel"
        if (parts.size() == 5
            && parts.get(0).isEmpty()
            && parts.get(1).equals("v1")
            && parts.get(2).equals("sessions")
            && parts.get(4).equals("cancel")
            && !parts.get(3).isEmpty()) {
          only(method, "POST");
          return cancel(decode(parts.get(3)));
        }
        if (path.equals("/v1/approvals") || path.equals("/v1/approvals/")) {
          only(method, "GET");
          return approvals();
        }
        // "", "v1", "approvals", id
        if (parts.size() == 4
            && parts.get(0).isEmpty()
            && parts.get(1).equals("v1")
            && parts.get(2).equals("approvals")
            && !parts.get(3).isEmpty()) {
          only(method, "POST");
          return answer(decode(parts.get(3)), body(x));
        }
        throw new Refusal(
            404,
            "not_found",
            "no endpoint " + method + " " + path + "; the endpoints are " + ENDPOINTS);
      }
    }
  }

  private static void only(String method, String allowed) {
    if (!method.equals(allowed)) {
      throw new Refusal(
          405,
          "method_not_allowed",
          method + " is not allowed here; use " + allowed,
          Map.of("Allow", allowed));
    }
  }

  private static byte[] body(HttpExchange x) throws IOException {
    try (InputStream in = x.getRequestBody()) {
      byte[] body = in.readNBytes(MAX_BODY_BYTES + 1);
      if (body.length > MAX_BODY_BYTES) {
        throw new Refusal(
            413, "too_large", "the body is over " + MAX_BODY_BYTES / (1024 * 1024) + " MiB");
      }
      return body;
    }
  }

  private static String decode(String segment) {
    try {
      return URLDecoder.decode(segment.replace("+", "%2B"), StandardCharsets.UTF_8);
    } catch (IllegalArgumentException e) {
      throw new Refusal(400, "bad_request", "bad percent-encoding in '" + segment + "'");
    }
  }

  // ---- endpoints ----

  private Response call(byte[] body) {
    CallRequest request;
    try {
      request = CallRequest.fromJson(body);
    } catch (IllegalArgumentException e) {
      throw new Refusal(400, "bad_request", e.getMessage());
    }
    if (stopping) {
      throw shuttingDown();
    }
    CallService.Completed done;
    try {
      done = calls.submit(request).join();
    } catch (IllegalStateException e) {
      throw shuttingDown();
    }
    return new Response(200, CallReply.toJson(done));
  }

  private static Refusal shuttingDown() {
    return new Refusal(503, "shutting_down", "phrony-worker dev is shutting down");
  }

  private Response cancel(String sessionId) {
    ObjectNode o = Json.object();
    o.put("session_id", sessionId);
    ArrayNode ids = o.putArray("cancelled");
    calls.cancelSession(sessionId).forEach(ids::add);
    return new Response(200, o);
  }

  private Response approvals() {
    ObjectNode o = Json.object();
    ApprovalPolicy policy = calls.approvals().policy();
    ArrayNode patterns = o.putArray("require_approval");
    policy.rules().forEach(r -> patterns.add(r.pattern()));
    if (policy.timeout().isPresent()) {
      o.put("approval_timeout_ms", policy.timeout().get().toMillis());
    } else {
      o.putNull("approval_timeout_ms");
    }
    ArrayNode list = o.putArray("approvals");
    calls.approvals().pending().forEach(p -> list.add(p.toJson()));
    return new Response(200, o);
  }

  /** {@code RunSessionInteractiveToolApproval}: approve (maybe with new arguments) or deny. */
  private Response answer(String approvalId, byte[] body) {
    JsonNode json;
    try {
      json = Json.parse(body);
    } catch (SyntaxException e) {
      throw new Refusal(400, "bad_request", "the body is not JSON: " + e.getMessage());
    }
    if (!json.isObject()) {
      throw new Refusal(
          400,
          "bad_request",
          "the body must be a JSON object like " + "{\"approved\": true, \"comment\": \"ok\"}");
    }
    for (Map.Entry<String, JsonNode> field : json.properties()) {
      if (!ANSWER_FIELDS.contains(field.getKey())) {
        throw new Refusal(
            400,
            "bad_request",
            "unknown field '"
                + field.getKey()
                + "'; the fields are "
                + String.join(", ", ANSWER_FIELDS));
      }
    }
    JsonNode approved = json.get("approved");
    if (approved == null || !approved.isBoolean()) {
      throw new Refusal(400, "bad_request", "approved is required: true or false");
    }
    JsonNode comment = json.path("comment");
    if (!comment.isMissingNode() && !comment.isNull() && !comment.isTextual()) {
      throw new Refusal(400, "bad_request", "comment must be a string");
    }
    JsonNode args = json.get("args");
    String replacement =
        args == null || args.isNull() ? null : new String(Json.bytes(args), StandardCharsets.UTF_8);
    if (replacement != null && !approved.booleanValue()) {
      throw new Refusal(
          400,
          "bad_request",
          "args replace the arguments of an approved call:" + " leave them out of a denial");
    }
    Approvals.Answer answer =
        calls
            .approvals()
            .answer(
                approvalId,
                approved.booleanValue(),
                comment.isTextual() ? comment.textValue() : "",
                replacement);
    return switch (answer) {
      case Approvals.Settled s -> {
        ObjectNode o = Json.object();
        o.put("approval_id", s.pending().approvalId());
        o.put("call_id", s.pending().call().callId());
        o.put("session_id", s.pending().call().sessionId());
        o.put("tool", s.pending().call().tool());
        o.put("version", s.pending().call().version());
        o.put("decision", s.verdict() instanceof Approvals.Approved ? "approved" : "denied");
        o.put("args_replaced", s.verdict() instanceof Approvals.Approved a && a.argsReplaced());
        yield new Response(200, o);
      }
      case Approvals.ArgsRefused r ->
          throw new Refusal(
              422,
              "invalid_args",
              "the args do not"
                  + " fit the input schema of "
                  + r.pending().call().key()
                  + ": "
                  + r.violation()
                  + "; approval "
                  + approvalId
                  + " is still waiting");
      case Approvals.NotPending n -> {
        List<String> waiting =
            calls.approvals().pending().stream().map(Approvals.Pending::approvalId).toList();
        throw new Refusal(
            404,
            "not_found",
            "no approval "
                + approvalId
                + " is waiting (it was"
                + " answered, expired, or never existed); waiting: "
                + (waiting.isEmpty() ? "none" : String.join(", ", waiting)));
      }
    };
  }

  /** The session id of {@code /v1/sessions/{id}/events}, if that is the path. */
  private static Optional<String> eventsOf(String path) {
    List<String> parts = List.of(path.split("/", -1));
    // "", "v1", "sessions", id, "events"
    if (parts.size() == 5
        && parts.get(0).isEmpty()
        && parts.get(1).equals("v1")
        && parts.get(2).equals("sessions")
        && parts.get(4).equals("events")
        && !parts.get(3).isEmpty()) {
      return Optional.of(decode(parts.get(3)));
    }
    return Optional.empty();
  }

  /**
   * A session's events as newline-delimited JSON: those kept, or with {@code follow} each new one
   * as it happens, until the client goes away or dev stops. The headers go out once the follower is
   * in place, so a client that waits for them misses nothing submitted after.
   */
  private void events(HttpExchange x, String sessionId) throws IOException {
    Map<String, String> query = query(x.getRequestURI().getRawQuery());
    long after = 0;
    if (query.containsKey("after")) {
      try {
        after = Long.parseLong(query.get("after"));
      } catch (NumberFormatException e) {
        after = -1;
      }
      if (after < 0) {
        throw new Refusal(400, "bad_request", "after must be an event number (seq), 0 or more");
      }
    }
    String follow = query.getOrDefault("follow", "false");
    if (!follow.equals("true") && !follow.equals("false")) {
      throw new Refusal(400, "bad_request", "follow must be true or false");
    }
    x.getResponseHeaders().set("Content-Type", "application/x-ndjson; charset=utf-8");
    if (follow.equals("false")) {
      List<SessionEvents.Event> kept =
          sessions
              .events(sessionId, after)
              .orElseThrow(
                  () ->
                      new Refusal(
                          404,
                          "not_found",
                          "no session "
                              + sessionId
                              + " (it has no call yet, or it is too old to be kept); follow=true waits for it"));
      StringBuilder b = new StringBuilder();
      kept.forEach(e -> b.append(e.json()).append('\n'));
      byte[] bytes = b.toString().getBytes(StandardCharsets.UTF_8);
      try (x) {
        x.sendResponseHeaders(200, bytes.length == 0 ? -1 : bytes.length);
        if (bytes.length > 0) {
          x.getResponseBody().write(bytes);
        }
      }
      return;
    }
    try (x;
        SessionEvents.Follower f = sessions.follow(sessionId, after)) {
      x.sendResponseHeaders(200, 0); // chunked, until the end
      OutputStream out = x.getResponseBody();
      out.flush();
      SessionEvents.Event e;
      while ((e = f.next(KEEPALIVE)) != null) {
        // An empty line when idle: writing is how a client that went away is noticed (and its
        // follower dropped); readers skip empty lines.
        out.write(
            e == SessionEvents.Follower.IDLE
                ? NEWLINE
                : (e.json() + "\n").getBytes(StandardCharsets.UTF_8));
        out.flush();
      }
    } catch (IOException e) {
      log.debug("control API: session {} follower went away: {}", sessionId, e.toString());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt(); // stopping
    }
  }

  /** {@code a=1&b=2}, percent-decoded; a parameter it does not know is refused. */
  private static Map<String, String> query(String raw) {
    Map<String, String> q = new LinkedHashMap<>();
    if (raw == null || raw.isEmpty()) {
      return q;
    }
    for (String pair : raw.split("&")) {
      int eq = pair.indexOf('=');
      String key = decode(eq < 0 ? pair : pair.substring(0, eq));
      if (!EVENTS_PARAMS.contains(key)) {
        throw new Refusal(
            400,
            "bad_request",
            "unknown parameter '"
                + key
                + "'; the parameters"
                + " are "
                + String.join(", ", EVENTS_PARAMS));
      }
      q.put(key, eq < 0 ? "true" : decode(pair.substring(eq + 1)));
    }
    return q;
  }

  private Response workers() {
    return new Response(200, RuntimeViews.workers(runtime.workers()));
  }

  private Response queues() {
    return new Response(200, RuntimeViews.queues(runtime.inFlight(), runtime.queues()));
  }

  /**
   * {@code run}'s {@code /handlers}, of dev's own worker: {@code list-handlers --worker} reads it.
   */
  private Response handlers() {
    Supplier<String> json = handlers;
    if (json == null) {
      throw new Refusal(
          404,
          "no_worker",
          "this dev runs no worker of its own (--no-host): ask the worker connected to it"
              + " (the --http endpoint of a 'run')");
    }
    return new Response(200, Json.parse(json.get()));
  }

  private Response health() {
    ObjectNode o = Json.object();
    boolean up = !stopping && runtime.isRunning();
    o.put("status", up ? "ok" : "stopping");
    o.put("runtime", runtime.target());
    o.put("workers", runtime.workers().size());
    return new Response(up ? 200 : 503, o);
  }

  // ---- output ----

  static ObjectNode error(String code, String message) {
    ObjectNode o = Json.object();
    ObjectNode e = o.putObject("error");
    e.put("code", code);
    e.put("message", message);
    return o;
  }

  private static void send(HttpExchange x, Response r) {
    byte[] body = (Json.pretty(r.body()) + "\n").getBytes(StandardCharsets.UTF_8);
    try (x) {
      x.getResponseHeaders().set("Content-Type", "application/json; charset=utf-8");
      r.headers().forEach((k, v) -> x.getResponseHeaders().set(k, v));
      x.sendResponseHeaders(r.status(), body.length);
      x.getResponseBody().write(body);
    } catch (IOException e) {
      // The client went away (e.g. Ctrl-C on `call`); nothing to answer.
      log.debug(
          "control API: could not answer {} {}: {}",
          x.getRequestMethod(),
          x.getRequestURI(),
          e.toString());
    }
  }
}
