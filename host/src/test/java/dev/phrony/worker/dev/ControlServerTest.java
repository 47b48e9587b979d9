package dev.phrony.worker.dev;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.phrony.worker.testkit.Await;
import dev.phrony.worker.testkit.Call;
import dev.phrony.worker.testkit.FakeScheduler;
import dev.phrony.worker.testkit.LocalRuntime;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.InstantSource;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The control API over real HTTP on loopback, in front of a real {@link
 * dev.phrony.worker.testkit.LocalRuntime} and a real host serving {@link DevFixture}'s handlers.
 */
class ControlServerTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final HttpClient HTTP = HttpClient.newHttpClient();

  static DevServer dev;
  static StringWriter console = new StringWriter();

  @BeforeAll
  static void start() {
    dev = DevFixture.start();
    dev.showEvents(new PrintWriter(console, true));
  }

  @AfterAll
  static void stop() {
    dev.close();
  }

  record Answer(int status, JsonNode json, HttpResponse<String> raw) {}

  static Answer send(String method, String path, String body) throws Exception {
    HttpRequest.Builder b =
        HttpRequest.newBuilder(URI.create(dev.controlUrl() + path)).timeout(Duration.ofSeconds(30));
    b.method(
        method,
        body == null
            ? HttpRequest.BodyPublishers.noBody()
            : HttpRequest.BodyPublishers.ofString(body));
    HttpResponse<String> r = HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
    assertThat(r.headers().firstValue("Content-Type")).hasValue("application/json; charset=utf-8");
    return new Answer(r.statusCode(), JSON.readTree(r.body()), r);
  }

  static Answer post(String body) throws Exception {
    return send("POST", "/v1/calls", body);
  }

  static void assertBadRequest(Answer a, String messagePart) {
    assertThat(a.status()).as(a.json().toString()).isEqualTo(400);
    assertThat(a.json().path("error").path("code").asText()).isEqualTo("bad_request");
    assertThat(a.json().path("error").path("message").asText()).contains(messagePart);
  }

  // ---- calls ----

  @Test
  void a_result_comes_back_with_its_payload_as_json_numbers_exactly_as_the_handler_wrote_them()
      throws Exception {
    Answer a =
        post(
            "{\"tool\":\"echo\",\"version\":\"1.0.0\","
                + "\"args\":{\"price\":1.10,\"big\":123456789012345678901234567890,\"list\":[1,{}]}}");

    assertThat(a.status()).isEqualTo(200);
    JsonNode j = a.json();
    assertThat(j.path("outcome").asText()).isEqualTo("result");
    assertThat(a.raw().body())
        .contains("\"price\": 1.10")
        .contains("123456789012345678901234567890");
    assertThat(j.path("payload").path("list").get(1).isObject()).isTrue();
    assertThat(j.path("tool").asText()).isEqualTo("echo");
    assertThat(j.path("version").asText()).isEqualTo("1.0.0");
    assertThat(j.path("call_id").asText())
        .matches("s-[0-9a-f]{8}:av-local:1:0")
        .startsWith(j.path("session_id").asText() + ":");
    assertThat(j.path("worker_id").asText()).isEqualTo(DevFixture.WORKER_ID);
    assertThat(j.path("elapsed_ms").isIntegralNumber()).isTrue();
    assertThat(j.has("error")).isFalse();
  }

  @Test
  void version_defaults_to_default_and_args_to_an_empty_object_and_a_text_payload_stays_text()
      throws Exception {
    Answer a = post("{\"tool\":\"text\"}");

    assertThat(a.status()).isEqualTo(200);
    assertThat(a.json().path("version").asText()).isEqualTo("default");
    assertThat(a.json().path("outcome").asText()).isEqualTo("result");
    assertThat(a.json().path("payload_text").asText()).isEqualTo("plain words");
    assertThat(a.json().has("payload")).isFalse();
  }

  @Test
  void a_tool_error_is_an_outcome_not_a_failed_request() throws Exception {
    Answer a = post("{\"tool\":\"fail\",\"version\":\"1.0.0\",\"args\":{}}");

    assertThat(a.status()).isEqualTo(200);
    assertThat(a.json().path("outcome").asText()).isEqualTo("tool_error");
    assertThat(a.json().path("error").path("code").asText()).isEqualTo("out_of_stock");
    assertThat(a.json().path("error").path("message").asText()).isEqualTo("no more widgets");
    assertThat(a.json().path("error").path("nack").asBoolean()).isFalse();
  }

  @Test
  void an_unserved_tool_ends_no_handler_at_once_with_the_served_keys_as_a_hint() throws Exception {
    Answer a = post("{\"tool\":\"nope\",\"version\":\"2\",\"deadline_ms\":100}");

    assertThat(a.status()).isEqualTo(200);
    assertThat(a.json().path("outcome").asText()).isEqualTo("dispatch_error");
    assertThat(a.json().path("error").path("kind").asText()).isEqualTo("no_handler");
    assertThat(a.json().path("error").path("message").asText())
        .isEqualTo("no handler registered for tool");
    assertThat(a.json().path("hint").asText())
        .isEqualTo(
            "no worker serves nope@2; served: "
                + "echo@1.0.0, fail@1.0.0, hold@1.0.0, text@default");
    assertThat(a.json().has("worker_id")).isFalse();
  }

  @Test
  void a_deadline_reaches_the_handler_which_is_interrupted_when_it_passes() throws Exception {
    Answer a =
        post(
            "{\"tool\":\"hold\",\"version\":\"1.0.0\",\"session_id\":\"deadline\","
                + "\"deadline_ms\":300}");

    assertThat(a.json().path("outcome").asText()).as(a.json().toString()).isEqualTo("tool_error");
    assertThat(a.json().path("error").path("code").asText()).isEqualTo("deadline_exceeded");
    Await.until("hold's slot freed", () -> dev.runtime().workers().get(0).busy("hold@1.0.0") == 0);
  }

  @Test
  void calls_of_one_session_are_numbered_like_the_runtime_numbers_them() throws Exception {
    Answer first = post("{\"tool\":\"echo\",\"version\":\"1.0.0\",\"session_id\":\"numbered\"}");
    Answer second = post("{\"tool\":\"echo\",\"version\":\"1.0.0\",\"session_id\":\"numbered\"}");

    assertThat(first.json().path("call_id").asText()).isEqualTo("numbered:av-local:1:0");
    assertThat(second.json().path("call_id").asText()).isEqualTo("numbered:av-local:1:1");
    assertThat(second.json().path("session_id").asText()).isEqualTo("numbered");
  }

  @Test
  void cancelling_a_session_ends_its_running_call_cancelled_and_names_it() throws Exception {
    CompletableFuture<Answer> running =
        CompletableFuture.supplyAsync(
            () -> {
              try {
                return post(
                    "{\"tool\":\"hold\",\"version\":\"1.0.0\",\"session_id\":\"doomed\","
                        + "\"deadline_ms\":30000}");
              } catch (Exception e) {
                throw new IllegalStateException(e);
              }
            });
    Await.until("hold running", () -> dev.runtime().workers().get(0).busy("hold@1.0.0") == 1);

    Answer cancel = send("POST", "/v1/sessions/doomed/cancel", null);

    assertThat(cancel.status()).isEqualTo(200);
    assertThat(cancel.json().path("session_id").asText()).isEqualTo("doomed");
    assertThat(cancel.json().path("cancelled").toString()).isEqualTo("[\"doomed:av-local:1:0\"]");
    Answer outcome = running.get(30, TimeUnit.SECONDS);
    assertThat(outcome.json().path("outcome").asText()).isEqualTo("dispatch_error");
    assertThat(outcome.json().path("error").path("kind").asText()).isEqualTo("cancelled");
    Await.until("hold's slot freed", () -> dev.runtime().workers().get(0).busy("hold@1.0.0") == 0);
  }

  @Test
  void cancelling_a_session_without_calls_in_flight_is_fine_and_ids_are_percent_decoded()
      throws Exception {
    Answer cancel = send("POST", "/v1/sessions/no%20such%2Fsession/cancel", "");

    assertThat(cancel.status()).isEqualTo(200);
    assertThat(cancel.json().path("session_id").asText()).isEqualTo("no such/session");
    assertThat(cancel.json().path("cancelled").isEmpty()).isTrue();
  }

  @Test
  void every_call_is_shown_as_a_tool_call_and_a_tool_result_line() throws Exception {
    post("{\"tool\":\"echo\",\"version\":\"1.0.0\",\"session_id\":\"shown\",\"args\":[1,2]}");
    post("{\"tool\":\"fail\",\"version\":\"1.0.0\",\"session_id\":\"shown\"}");

    List<String> lines = console.toString().lines().filter(l -> l.contains("shown:")).toList();
    assertThat(lines).hasSize(4);
    assertThat(lines.get(0))
        .matches(
            "\\d\\d:\\d\\d:\\d\\d\\.\\d{3} tool_call   "
                + "call_id=shown:av-local:1:0 tool=echo@1.0.0 args=5B");
    assertThat(lines.get(1))
        .matches(
            "\\d\\d:\\d\\d:\\d\\d\\.\\d{3} tool_result "
                + "call_id=shown:av-local:1:0 outcome=result size=5B worker="
                + DevFixture.WORKER_ID
                + " elapsed=\\d+ms");
    assertThat(lines.get(3))
        .contains(
            "tool_result call_id=shown:av-local:1:1 "
                + "outcome=tool_error code=out_of_stock worker=");
  }

  // ---- views ----

  @Test
  void workers_lists_the_registration_with_its_handlers_and_slots() throws Exception {
    Answer a = send("GET", "/v1/workers", null);

    assertThat(a.status()).isEqualTo(200);
    JsonNode w = a.json().path("workers").get(0);
    assertThat(w.path("worker_id").asText()).isEqualTo(DevFixture.WORKER_ID);
    assertThat(w.path("connected").asBoolean()).isTrue();
    assertThat(w.path("image_digest").asText()).isEqualTo("sha256:test");
    assertThat(w.path("handlers").findValuesAsText("key"))
        .containsExactly("echo@1.0.0", "fail@1.0.0", "hold@1.0.0", "text@default");
    JsonNode hold = w.path("handlers").get(2);
    assertThat(hold.path("max_concurrency").asInt()).isEqualTo(1);
    assertThat(hold.path("descriptor_hash").asText()).startsWith("sha256:");
    assertThat(hold.has("busy")).isTrue();
  }

  @Test
  void queues_and_health_answer() throws Exception {
    Answer queues = send("GET", "/v1/queues", null);
    Answer health = send("GET", "/healthz", null);

    assertThat(queues.status()).isEqualTo(200);
    assertThat(queues.json().path("queues").isArray()).isTrue();
    assertThat(queues.json().has("in_flight")).isTrue();
    assertThat(health.status()).isEqualTo(200);
    assertThat(health.json().path("status").asText()).isEqualTo("ok");
    assertThat(health.json().path("runtime").asText()).isEqualTo(dev.runtimeTarget());
    assertThat(health.json().path("workers").asInt()).isEqualTo(1);
  }

  @Test
  void the_control_api_listens_on_loopback_only() {
    assertThat(dev.controlUrl()).startsWith("http://127.0.0.1:");
    assertThat(dev.runtimeTarget()).startsWith("127.0.0.1:");
  }

  // ---- bad requests ----

  @Test
  void a_body_that_is_not_json_is_refused_with_where_it_breaks() throws Exception {
    assertBadRequest(post("{\"tool\":\"echo\",\n \"args\": {oops}}"), "the body is not JSON: ");
    assertBadRequest(post("{\"tool\":\"echo\",\n \"args\": {oops}}"), "at line 2, column 11");
    assertBadRequest(post("{\"tool\":\"echo\"} trailing"), "the body is not JSON");
    assertBadRequest(post(""), "no JSON value");
  }

  @Test
  void a_body_that_is_not_a_call_is_refused_naming_the_field() throws Exception {
    assertBadRequest(post("[1]"), "must be a JSON object");
    assertBadRequest(post("{\"args\":{}}"), "tool is required");
    assertBadRequest(post("{\"tool\":\"echo@1.0.0\"}"), "give the version apart");
    assertBadRequest(post("{\"tool\":\"no spaces\"}"), "can never be served");
    assertBadRequest(post("{\"tool\":\"echo\",\"version\":\"\"}"), "version '' can never be");
    assertBadRequest(
        post("{\"tool\":\"echo\",\"session\":\"s\"}"),
        "unknown field 'session'; the fields are tool, version, args, session_id, deadline_ms");
    assertBadRequest(
        post("{\"tool\":\"echo\",\"deadline_ms\":\"5s\"}"),
        "deadline_ms must be a whole number of milliseconds");
    assertBadRequest(post("{\"tool\":\"echo\",\"deadline_ms\":-1}"), "deadline must be positive");
    assertBadRequest(post("{\"tool\":\"echo\",\"session_id\":\"a:b\"}"), "must not contain ':'");
    assertBadRequest(post("{\"tool\":7}"), "tool must be a string");
  }

  @Test
  void an_unknown_path_is_404_and_a_wrong_method_405_with_allow() throws Exception {
    Answer missing = send("GET", "/v1/nothing", null);
    Answer wrongMethod = send("GET", "/v1/calls", null);
    Answer cancelByGet = send("GET", "/v1/sessions/s/cancel", null);

    assertThat(missing.status()).isEqualTo(404);
    assertThat(missing.json().path("error").path("code").asText()).isEqualTo("not_found");
    assertThat(missing.json().path("error").path("message").asText())
        .contains("GET /v1/nothing")
        .contains("POST /v1/calls");
    assertThat(wrongMethod.status()).isEqualTo(405);
    assertThat(wrongMethod.raw().headers().firstValue("Allow")).hasValue("POST");
    assertThat(wrongMethod.json().path("error").path("code").asText())
        .isEqualTo("method_not_allowed");
    assertThat(cancelByGet.status()).isEqualTo(405);
  }

  @Test
  void once_dev_is_stopping_new_calls_are_refused_503_and_health_says_so() throws Exception {
    CallService.Listener quiet =
        new CallService.Listener() {
          @Override
          public void submitted(Call call) {}

          @Override
          public void completed(CallService.Completed completed) {}
        };
    try (LocalRuntime rt = LocalRuntime.builder().start();
        CallService calls =
            new CallService(rt, Duration.ofSeconds(1), new FakeScheduler(), quiet, List.of());
        ControlServer control =
            ControlServer.start(0, calls, rt, new SessionEvents(InstantSource.system()))) {
      control.refuseNewCalls();

      HttpResponse<String> call =
          HTTP.send(
              HttpRequest.newBuilder(URI.create(control.url() + "/v1/calls"))
                  .POST(HttpRequest.BodyPublishers.ofString("{\"tool\":\"echo\"}"))
                  .build(),
              HttpResponse.BodyHandlers.ofString());
      HttpResponse<String> health =
          HTTP.send(
              HttpRequest.newBuilder(URI.create(control.url() + "/healthz")).build(),
              HttpResponse.BodyHandlers.ofString());

      assertThat(call.statusCode()).isEqualTo(503);
      assertThat(JSON.readTree(call.body()).path("error").path("code").asText())
          .isEqualTo("shutting_down");
      assertThat(health.statusCode()).isEqualTo(503);
      assertThat(JSON.readTree(health.body()).path("status").asText()).isEqualTo("stopping");
    }
  }
}
