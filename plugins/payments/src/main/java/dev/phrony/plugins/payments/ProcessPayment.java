package dev.phrony.plugins.payments;

import dev.phrony.worker.api.SideEffectClass;
import dev.phrony.worker.api.ToolCall;
import dev.phrony.worker.api.ToolDescriptor;
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
   * processing_ms}, how long the pretend bank takes (for demos and crash tests).
   */
  public record Args(BigDecimal amount, String currency, String payee, Long processing_ms) {}

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
        // Checked by the host before handle() runs (a three-letter ISO 4217 currency, a
        // positive amount, a payee that is not blank).
        .inputSchema(
            """
            {"type":"object","required":["amount","currency","payee"],"properties":{\
            "amount":{"type":"number","exclusiveMinimum":0},\
            "currency":{"type":"string","pattern":"^[A-Z]{3}$"},\
            "payee":{"type":"string","pattern":"\\\\S"},\
            "processing_ms":{"type":"integer","minimum":0,"maximum":60000}}}""")
        .build();
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
