package dev.phrony.worker.dev;

import static org.assertj.core.api.Assertions.assertThat;

import dev.phrony.worker.call.ArgsCheck;
import dev.phrony.worker.call.SchemaCheck;
import dev.phrony.worker.config.ConfigFile;
import dev.phrony.worker.testkit.Call;
import dev.phrony.worker.testkit.FakeScheduler;
import dev.phrony.worker.testkit.Outcome;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * The approval state of the embedded runtime, on a fake clock: held, answered, refused, expired and
 * withdrawn, each exactly once.
 */
class ApprovalsTest {
  private static final Duration TIMEOUT = Duration.ofMinutes(5);
  private static final String PAY = "payments.process-payment";
  private static final ArgsCheck PAY_SCHEMA =
      SchemaCheck.compile(
          """
      {"type":"object","required":["amount","currency"],"properties":{
      "amount":{"type":"number","exclusiveMinimum":0},
      "currency":{"type":"string","pattern":"^[A-Z]{3}$"}}}""");

  private final FakeScheduler timers = new FakeScheduler();
  private final List<Approvals.Pending> announced = new ArrayList<>();

  private Approvals approvals(Optional<Duration> timeout) {
    ApprovalPolicy policy =
        new ApprovalPolicy(
            ApprovalPolicy.resolve(List.of("payments.*"), null, ConfigFile.none()).rules(),
            timeout);
    return new Approvals(
        policy, timers, key -> key.startsWith(PAY + "@") ? PAY_SCHEMA : ArgsCheck.NONE);
  }

  private Approvals.Hold hold(Approvals approvals, Call call) {
    return approvals.hold(call, announced::add).orElseThrow();
  }

  private static Call pay(String session) {
    return Call.of(
        session + ":av-local:1:0", session, PAY, "1.0.0", "{\"amount\":12.5,\"currency\":\"EUR\"}");
  }

  @Test
  void only_calls_the_policy_names_are_held_and_announced_before_they_can_be_answered() {
    Approvals approvals = approvals(Optional.of(TIMEOUT));
    Instant start = timers.clock().instant();

    assertThat(approvals.hold(Call.of("c0", "s0", "echo", "default", "{}"), announced::add))
        .isEmpty();
    Approvals.Hold held =
        approvals
            .hold(
                pay("s1"),
                p -> {
                  // Announced first: nobody can answer it yet.
                  assertThat(approvals.pending(p.approvalId())).isEmpty();
                  announced.add(p);
                })
            .orElseThrow();

    Approvals.Pending p = held.pending();
    assertThat(announced).containsExactly(p);
    assertThat(p.approvalId()).matches("ap-[0-9a-f]{8}");
    assertThat(p.reason()).isEqualTo("require-approval payments.* (flag --require-approval)");
    assertThat(p.requestedAt()).isEqualTo(start);
    assertThat(p.expiresAt()).contains(start.plus(TIMEOUT));
    assertThat(p.approvalsRequired()).isEqualTo(1);
    assertThat(p.approvalsReceived()).isZero();
    assertThat(approvals.pending()).containsExactly(p);
    assertThat(held.verdict()).isNotDone();
  }

  @Test
  void approved_as_proposed_the_call_goes_on_unchanged_and_only_once() {
    Approvals approvals = approvals(Optional.of(TIMEOUT));
    Call call = pay("s1");
    Approvals.Hold held = hold(approvals, call);
    String id = held.pending().approvalId();

    Approvals.Answer answer = approvals.answer(id, true, "fine", null);

    assertThat(answer).isInstanceOf(Approvals.Settled.class);
    assertThat(held.verdict().join()).isEqualTo(new Approvals.Approved(call, "fine", false));
    assertThat(approvals.pending()).isEmpty();
    assertThat(timers.pending()).as("the expiry timer is cancelled").isZero();
    assertThat(approvals.answer(id, false, "too late", null))
        .isEqualTo(new Approvals.NotPending(id));
    assertThat(held.verdict().join()).isInstanceOf(Approvals.Approved.class);
  }

  @Test
  void replacement_args_that_break_the_schema_are_refused_with_the_pointer_and_it_stays_pending() {
    Approvals approvals = approvals(Optional.of(TIMEOUT));
    Approvals.Hold held = hold(approvals, pay("s1"));
    String id = held.pending().approvalId();

    Approvals.Answer refused =
        approvals.answer(id, true, "", "{\"amount\":\"lots\",\"currency\":\"EUR\"}");

    assertThat(refused).isInstanceOf(Approvals.ArgsRefused.class);
    assertThat(((Approvals.ArgsRefused) refused).violation())
        .isEqualTo("/amount: expected number, got string");
    assertThat(approvals.pending()).extracting(Approvals.Pending::approvalId).containsExactly(id);
    assertThat(held.verdict()).isNotDone();

    Approvals.Answer ok =
        approvals.answer(id, true, "halved", "{\"amount\":6.25," + "\"currency\":\"EUR\"}");

    assertThat(ok).isInstanceOf(Approvals.Settled.class);
    Approvals.Approved approved = (Approvals.Approved) held.verdict().join();
    assertThat(approved.argsReplaced()).isTrue();
    assertThat(approved.call().argsText()).isEqualTo("{\"amount\":6.25,\"currency\":\"EUR\"}");
    assertThat(approved.call().callId()).isEqualTo(held.pending().call().callId());
  }

  @Test
  void denied_it_ends_with_the_comment() {
    Approvals approvals = approvals(Optional.empty());
    Approvals.Hold held = hold(approvals, pay("s1"));

    approvals.answer(held.pending().approvalId(), false, "not this payee", null);

    assertThat(held.verdict().join()).isEqualTo(new Approvals.Denied("not this payee"));
    assertThat(approvals.pending()).isEmpty();
  }

  @Test
  void unanswered_it_expires_at_the_timeout_and_not_a_moment_before() {
    Approvals approvals = approvals(Optional.of(TIMEOUT));
    Approvals.Hold held = hold(approvals, pay("s1"));

    timers.advance(TIMEOUT.minusMillis(1));
    assertThat(held.verdict()).isNotDone();
    assertThat(approvals.pending()).hasSize(1);

    timers.advance(Duration.ofMillis(1));
    assertThat(held.verdict().join()).isEqualTo(new Approvals.Expired(TIMEOUT));
    assertThat(approvals.pending()).isEmpty();
    assertThat(approvals.answer(held.pending().approvalId(), true, "", null))
        .isInstanceOf(Approvals.NotPending.class);
  }

  @Test
  void without_a_timeout_it_waits_until_answered() {
    Approvals approvals = approvals(Optional.empty());
    Approvals.Hold held = hold(approvals, pay("s1"));

    assertThat(held.pending().expiresAt()).isEmpty();
    assertThat(timers.pending()).isZero();
    timers.advance(Duration.ofDays(30));
    assertThat(held.verdict()).isNotDone();
  }

  @Test
  void a_timer_that_fires_after_the_answer_changes_nothing() {
    Approvals approvals = approvals(Optional.of(TIMEOUT));
    Approvals.Hold held = hold(approvals, pay("s1"));
    approvals.answer(held.pending().approvalId(), false, "", null);

    timers.advance(TIMEOUT.multipliedBy(2));

    assertThat(held.verdict().join()).isEqualTo(new Approvals.Denied(""));
  }

  @Test
  void a_cancelled_session_withdraws_its_approvals_and_closing_withdraws_the_rest() {
    Approvals approvals = approvals(Optional.of(TIMEOUT));
    Approvals.Hold one = hold(approvals, pay("s1"));
    Approvals.Hold other = hold(approvals, pay("s2"));

    assertThat(approvals.withdrawSession("s1")).containsExactly("s1:av-local:1:0");
    assertThat(one.verdict().join()).isEqualTo(new Approvals.Withdrawn(Outcome.Kind.CANCELLED));
    assertThat(other.verdict()).isNotDone();

    approvals.close();
    assertThat(other.verdict().join()).isEqualTo(new Approvals.Withdrawn(Outcome.Kind.SHUTDOWN));
    assertThat(timers.pending()).isZero();
    Approvals.Hold late = approvals.hold(pay("s3"), announced::add).orElseThrow();
    assertThat(late.verdict().join()).isEqualTo(new Approvals.Withdrawn(Outcome.Kind.SHUTDOWN));
    assertThat(announced).hasSize(2);
  }
}
