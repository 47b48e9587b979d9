package dev.phrony.plugins.payments;

import dev.phrony.worker.api.SideEffectClass;
import dev.phrony.worker.api.ToolCall;
import dev.phrony.worker.api.ToolDescriptor;
import dev.phrony.worker.api.ToolParam;
import dev.phrony.worker.api.TypedToolHandler;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * {@code payments.process-payment@1.0.0}: a pretend payment. The payment id is derived from the
 * call id, so a second execution of one call would be visible as the same id twice in a ledger, and
 * a redelivered result can be checked against the first.
 */
public final class ProcessPayment
    extends TypedToolHandler<ProcessPayment.Args, ProcessPayment.Receipt> {

  /**
   * Arguments: amount in major units (e.g. 12.50), ISO 4217 currency, payee; optionally {@code
   * processing_ms}, how long the pretend bank takes (for demos and crash tests). The worker checks
   * every call against the schema generated from this record before {@link #handle} runs.
   */
  public record Args(
      @ToolParam(description = "amount in major units, e.g. 12.50", exclusiveMinimum = 0)
          BigDecimal amount,
      @ToolParam(description = "ISO 4217 currency code", pattern = "^[A-Z]{3}$", examples = "EUR")
          String currency,
      @ToolParam(description = "who is paid", pattern = "\\S") String payee,
      @ToolParam(
              description = "how long the pretend bank takes (demos and crash tests)",
              required = false,
              minimum = 0,
              maximum = 60000)
          Long processing_ms) {}

  /** The result. */
  public record Receipt(
      String payment_id, String status, BigDecimal amount, String currency, String payee) {}

  public ProcessPayment() {
    super(Args.class);
  }

  @Override
  public ToolDescriptor descriptor() {
    return ToolDescriptor.builder("payments.process-payment")
        .version("1.0.0")
        .sideEffectClass(SideEffectClass.NON_IDEMPOTENT_WRITE)
        .maxConcurrency(16)
        .description("Pays an amount to a payee (demo: no money moves)")
        .build(); // the input schema is generated from Args
  }

  @Override
  protected Receipt handle(Args args, ToolCall call) throws InterruptedException {
    if (args.processing_ms() != null && args.processing_ms() > 0) {
      Thread.sleep(Math.min(args.processing_ms(), 60_000));
    }
    return new Receipt(
        paymentId(call.callId()),
        "succeeded",
        args.amount(),
        args.currency(),
        args.payee().strip());
  }

  /** {@code pay_} + the first 16 hex digits of SHA-256(call id). */
  static String paymentId(String callId) {
    try {
      byte[] digest =
          MessageDigest.getInstance("SHA-256").digest(callId.getBytes(StandardCharsets.UTF_8));
      return "pay_" + HexFormat.of().formatHex(digest, 0, 8);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is always available", e);
    }
  }
}
