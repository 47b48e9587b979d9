package dev.phrony.worker.dev;

import static org.assertj.core.api.Assertions.assertThat;

import dev.phrony.worker.config.ConfigFile;
import dev.phrony.worker.outbox.MemoryOutbox;
import dev.phrony.worker.plugin.HandlerCatalog;
import dev.phrony.worker.testkit.Await;
import dev.phrony.worker.testkit.Call;
import dev.phrony.worker.testkit.FakeScheduler;
import dev.phrony.worker.testkit.LocalRuntime;
import dev.phrony.worker.testkit.Outcome;
import dev.phrony.worker.work.WorkClient;
import dev.phrony.worker.work.WorkOptions;
import dev.phrony.worker.work.WorkerIdentity;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Calls held for approval by {@link CallService}, against a real {@link LocalRuntime} and worker:
 * nothing reaches the worker until a human approves; what it then gets is what the human approved;
 * a denial or an expiry is a tool error and the handler never runs. Expiry runs on a fake clock.
 */
class CallServiceApprovalTest {
  private static final Duration TIMEOUT = Duration.ofMinutes(5);
  private final FakeScheduler timers = new FakeScheduler();
  private final List<String> heard = new CopyOnWriteArrayList<>();
  private final AtomicInteger paid = new AtomicInteger();
  private LocalRuntime runtime;
  private WorkClient worker;
  private CallService calls;
  private HandlerCatalog catalog;

  @BeforeEach
  void start() {
    runtime = LocalRuntime.builder().executionTimeout(Duration.ofMinutes(5)).start();
    catalog = DevFixture.catalog(DevFixture.Handler.pay(paid));
    worker =
        new WorkClient(
            WorkOptions.defaults(runtime.target(), new WorkerIdentity("w1", "", "")),
            catalog,
            new MemoryOutbox());
    worker.start();
    Await.until("registered", worker::registered);
    ApprovalPolicy policy =
        new ApprovalPolicy(
            ApprovalPolicy.resolve(List.of("pay@*"), null, ConfigFile.none()).rules(),
            Optional.of(TIMEOUT));
    HandlerCatalog served = catalog;
    Approvals approvals = new Approvals(policy, timers, Approvals.schemasOf(() -> served));
    calls =
        new CallService(
            runtime,
            Duration.ofSeconds(30),
            timers,
            new CallService.Listener() {
              @Override
              public void submitted(Call call) {
                heard.add("tool_call " + call.argsText());
              }

              @Override
              public void approvalRequired(Approvals.Pending pending) {
                heard.add("approval_required " + pending.call().callId());
              }

              @Override
              public void completed(CallService.Completed c) {
                heard.add("tool_result " + c.outcome().text());
              }
            },
            List.of(),
            approvals);
  }

  @AfterEach
  void stop() {
    calls.close();
    worker.close();
    runtime.close();
  }

  private CompletableFuture<CallService.Completed> pay(String args) {
    return calls.submit(new CallRequest("pay", "1.0.0", args, "s1", null));
  }

  private Approvals.Pending awaitPending() {
    Await.until("an approval", () -> !calls.approvals().pending().isEmpty());
    return calls.approvals().pending().getFirst();
  }

  private long invoked() {
    return runtime.worker("w1").orElseThrow().invoked("pay@1.0.0");
  }

  private static CallService.Completed await(CompletableFuture<CallService.Completed> f)
      throws Exception {
    return f.get(30, TimeUnit.SECONDS);
  }

  @Test
  void a_held_call_reaches_the_worker_only_once_approved() throws Exception {
    CompletableFuture<CallService.Completed> f = pay("{\"amount\":10}");
    Approvals.Pending p = awaitPending();
    assertThat(f).isNotDone();
    assertThat(invoked()).isZero();
    assertThat(calls.inFlight()).isEqualTo(1);

    calls.approvals().answer(p.approvalId(), true, "", null);

    CallService.Completed done = await(f);
    assertThat(done.outcome()).isInstanceOf(Outcome.Result.class);
    assertThat(done.outcome().text()).isEqualTo("{\"amount\":10}");
    assertThat(invoked()).isEqualTo(1);
    assertThat(heard)
        .containsExactly(
            "tool_call {\"amount\":10}",
            "approval_required " + p.call().callId(),
            "tool_result {\"amount\":10}");
  }

  @Test
  void the_handler_gets_the_replacement_args_and_a_deadline_counted_from_the_approval()
      throws Exception {
    CompletableFuture<CallService.Completed> f =
        calls.submit(
            new CallRequest("pay", "1.0.0", "{\"amount\":10}", "s1", Duration.ofSeconds(20)));
    Approvals.Pending p = awaitPending();
    timers.advance(Duration.ofMinutes(1)); // a human takes their time

    assertThat(calls.approvals().answer(p.approvalId(), true, "", "{\"amount\":\"ten\"}"))
        .isInstanceOf(Approvals.ArgsRefused.class);
    calls.approvals().answer(p.approvalId(), true, "", "{\"amount\":5}");

    CallService.Completed done = await(f);
    assertThat(done.outcome().text()).isEqualTo("{\"amount\":5}");
    assertThat(done.call().argsText()).isEqualTo("{\"amount\":5}");
    assertThat(done.call().deadlineUnixMs())
        .isEqualTo(timers.clock().instant().plusSeconds(20).toEpochMilli());
    assertThat(paid).hasValue(1);
  }

  @Test
  void a_denied_call_is_a_tool_error_and_never_reaches_the_worker() throws Exception {
    CompletableFuture<CallService.Completed> f = pay("{\"amount\":10}");
    Approvals.Pending p = awaitPending();

    calls.approvals().answer(p.approvalId(), false, "wrong payee", null);

    CallService.Completed done = await(f);
    assertThat(done.outcome())
        .isEqualTo(
            new Outcome.ToolError(
                Approvals.DENIED,
                "denied by the reviewer: wrong payee; the call was not run",
                false,
                done.outcome().trace()));
    assertThat(done.outcome().trace().workerId()).isNull();
    assertThat(invoked()).isZero();
    assertThat(paid).hasValue(0);
    assertThat(calls.inFlight()).isZero();
  }

  @Test
  void an_unanswered_call_expires_as_a_tool_error_without_reaching_the_worker() throws Exception {
    CompletableFuture<CallService.Completed> f = pay("{\"amount\":10}");
    awaitPending();

    timers.advance(TIMEOUT.minusMillis(1));
    assertThat(f).isNotDone();
    timers.advance(Duration.ofMillis(1));

    CallService.Completed done = await(f);
    assertThat(done.outcome()).isInstanceOf(Outcome.ToolError.class);
    assertThat(done.outcome().text())
        .isEqualTo("approval_expired: approval timed out after 5m; the call was not run");
    assertThat(done.outcome().trace().elapsed()).isEqualTo(TIMEOUT);
    assertThat(invoked()).isZero();
  }

  @Test
  void cancelling_the_session_ends_a_held_call_cancelled() throws Exception {
    CompletableFuture<CallService.Completed> f = pay("{\"amount\":10}");
    Approvals.Pending p = awaitPending();

    assertThat(calls.cancelSession("s1")).containsExactly(p.call().callId());

    CallService.Completed done = await(f);
    assertThat(done.outcome()).isInstanceOf(Outcome.DispatchError.class);
    assertThat(((Outcome.DispatchError) done.outcome()).kind()).isEqualTo(Outcome.Kind.CANCELLED);
    assertThat(calls.approvals().pending()).isEmpty();
    assertThat(invoked()).isZero();
  }

  @Test
  void calls_the_policy_does_not_name_are_not_held() throws Exception {
    CallService.Completed done =
        await(calls.submit(new CallRequest("echo", "1.0.0", "{}", null, null)));
    assertThat(done.outcome()).isInstanceOf(Outcome.Result.class);
    assertThat(heard).noneMatch(h -> h.startsWith("approval_required"));
  }
}
