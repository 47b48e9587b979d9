package dev.phrony.plugins.payments;

import static dev.phrony.worker.harness.HandlerHarness.payloadText;
import static org.assertj.core.api.Assertions.assertThat;

import dev.phrony.worker.harness.CallOutcome;
import dev.phrony.worker.harness.HandlerHarness;
import org.junit.jupiter.api.Test;

class ProcessPaymentTest {
  /** A deadline long past (Unix ms), whatever the clock says. */
  private static final long PASSED_DEADLINE = 1_000L;

  private static final String OK = "{\"amount\":12.50,\"currency\":\"EUR\",\"payee\":\"ACME\"}";

  @Test
  void the_payment_id_is_derived_from_the_call_id() {
    try (HandlerHarness h = HandlerHarness.of(new ProcessPayment())) {
      String first = payloadText(h.call("s:a:1:0", OK, 0));
      assertThat(first)
          .contains("\"payment_id\":\"" + ProcessPayment.paymentId("s:a:1:0") + "\"")
          .contains("\"status\":\"succeeded\"")
          .contains("\"amount\":12.50");
      assertThat(ProcessPayment.paymentId("s:a:1:0"))
          .matches("pay_[0-9a-f]{16}")
          .isNotEqualTo(ProcessPayment.paymentId("s:a:1:1"));
    }
  }

  @Test
  void bad_amount_currency_or_payee_is_refused_by_the_schema() {
    try (HandlerHarness h = HandlerHarness.of(new ProcessPayment())) {
      assertInvalid(h, "{\"amount\":0,\"currency\":\"EUR\",\"payee\":\"A\"}", "/amount: ");
      assertInvalid(h, "{\"amount\":-3,\"currency\":\"EUR\",\"payee\":\"A\"}", "/amount: ");
      assertInvalid(h, "{\"amount\":5,\"currency\":\"euro\",\"payee\":\"A\"}", "/currency: ");
      assertInvalid(h, "{\"amount\":5,\"currency\":\"EUR\",\"payee\":\" \"}", "/payee: ");
      assertInvalid(
          h,
          "{\"amount\":\"lots\",\"currency\":\"EUR\",\"payee\":\"A\"}",
          "/amount: expected number, got string");
      assertInvalid(h, "{\"currency\":\"EUR\",\"payee\":\"A\"}", "/amount: required, but missing");
    }
  }

  @Test
  void processing_time_is_interrupted_by_the_deadline() {
    try (HandlerHarness h = HandlerHarness.of(new ProcessPayment())) {
      // A deadline already passed when the call starts (no real time waited for): the 60 s of
      // processing are cut at once and the call ends as the deadline says.
      CallOutcome out =
          h.call(
              "slow",
              "{\"amount\":1,\"currency\":\"EUR\",\"payee\":\"A\"," + "\"processing_ms\":60000}",
              PASSED_DEADLINE);
      assertThat(out)
          .isInstanceOfSatisfying(
              CallOutcome.Error.class, e -> assertThat(e.code()).isEqualTo("deadline_exceeded"));
    }
  }

  private static void assertInvalid(HandlerHarness h, String args, String mentions) {
    assertThat(h.call(args))
        .isInstanceOfSatisfying(
            CallOutcome.Error.class,
            e -> {
              assertThat(e.code()).isEqualTo("invalid_args");
              assertThat(e.message()).contains(mentions);
            });
  }
}
