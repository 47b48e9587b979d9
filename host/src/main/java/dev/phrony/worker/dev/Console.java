package dev.phrony.worker.dev;

import dev.phrony.runtime.v1.WorkClientMsg;
import dev.phrony.runtime.v1.WorkHandlerAdvertisement;
import dev.phrony.runtime.v1.WorkServerMsg;
import dev.phrony.worker.testkit.Call;
import dev.phrony.worker.testkit.Event;
import dev.phrony.worker.testkit.Outcome;
import io.grpc.Status;
import java.io.PrintWriter;
import java.time.Clock;
import java.time.LocalTime;
import java.time.format.DateTimeFormatter;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * What {@code dev} prints on stdout while it runs, one line per event, named as a session's
 * interactive stream names them:
 *
 * <pre>
 * 12:00:00.100 worker_registered   worker_id=w1 handlers=echo@default,weather.forecast@1
 * 12:00:01.234 tool_call   call_id=s-1a:av-local:1:0 tool=weather.get-forecast@1.0.0 args=15B
 * 12:00:01.235 approval_required approval_id=ap-5e6f7a8b call_id=s-1a:av-local:1:0
 *              tool=payments.process-payment@1.0.0 args=58B expires=12:05:01
 *              answer: bin/phrony-worker approve ap-5e6f7a8b [--args JSON]
 *              | bin/phrony-worker deny ap-5e6f7a8b
 * 12:00:01.251 tool_result call_id=s-1a:av-local:1:0 outcome=result size=87B worker=w1 elapsed=17ms
 * 12:00:02.001 tool_result call_id=... outcome=tool_error code=invalid_args worker=w1 elapsed=3ms
 * 12:00:12.003 tool_result call_id=... outcome=dispatch_error kind=no_handler elapsed=10001ms
 * 12:00:30.100 worker_disconnected worker_id=w1 status=OK
 * </pre>
 *
 * Arguments and payloads are never printed, only their sizes. Each event is one line (the {@code
 * approval_required} example above is wrapped here only).
 */
final class Console implements CallService.Listener {
  private static final DateTimeFormatter TIME =
      DateTimeFormatter.ofPattern("HH:mm:ss.SSS", Locale.ROOT);
  private static final DateTimeFormatter EXPIRES =
      DateTimeFormatter.ofPattern("HH:mm:ss", Locale.ROOT);

  private final PrintWriter out;
  private final Clock clock;

  /** Given to the answer commands when it is not their default. */
  private final String controlUrl;

  /** Handlers sent in {@code register}, by stream, until the runtime answers {@code registered}. */
  private final Map<Long, List<String>> registering = new ConcurrentHashMap<>();

  Console(PrintWriter out, Clock clock, String controlUrl) {
    this.out = out;
    this.clock = clock;
    this.controlUrl = controlUrl;
  }

  @Override
  public void submitted(Call call) {
    line(
        "tool_call   call_id="
            + call.callId()
            + " tool="
            + call.key()
            + " args="
            + call.args().length
            + "B");
  }

  @Override
  public void approvalRequired(Approvals.Pending p) {
    String control = ControlClient.DEFAULT_URL.equals(controlUrl) ? "" : " --control " + controlUrl;
    line(
        "approval_required approval_id="
            + p.approvalId()
            + " call_id="
            + p.call().callId()
            + " tool="
            + p.call().key()
            + " args="
            + p.call().args().length
            + "B"
            + p.expiresAt()
                .map(t -> " expires=" + LocalTime.ofInstant(t, clock.getZone()).format(EXPIRES))
                .orElse("")
            + " answer: bin/phrony-worker approve "
            + p.approvalId()
            + control
            + " [--args JSON]"
            + " | bin/phrony-worker deny "
            + p.approvalId()
            + control);
  }

  @Override
  public void completed(CallService.Completed c) {
    Outcome o = c.outcome();
    StringBuilder b = new StringBuilder("tool_result call_id=").append(c.call().callId());
    switch (o) {
      case Outcome.Result r ->
          b.append(" outcome=result size=").append(r.payload().length).append('B');
      case Outcome.ToolError e ->
          b.append(" outcome=tool_error code=")
              .append(e.code().isEmpty() ? "\"\"" : e.code())
              .append(e.fromNack() ? " nack=true" : "");
      case Outcome.DispatchError e ->
          b.append(" outcome=dispatch_error kind=")
              .append(e.kind().name().toLowerCase(Locale.ROOT));
    }
    if (o.trace().workerId() != null) {
      b.append(" worker=").append(o.trace().workerId());
    }
    b.append(" elapsed=").append(o.trace().elapsed().toMillis()).append("ms");
    line(b.toString());
  }

  /** Workers coming and going: a runtime event listener. */
  void onEvent(Event e) {
    WorkClientMsg in = e.clientMsg();
    if (in != null && in.getBodyCase() == WorkClientMsg.BodyCase.REGISTER) {
      registering.put(
          e.streamId(),
          in.getRegister().getHandlersList().stream().map(h -> key(h)).sorted().toList());
      return;
    }
    WorkServerMsg out = e.serverMsg();
    if (out != null && out.getBodyCase() == WorkServerMsg.BodyCase.REGISTERED) {
      List<String> handlers = registering.remove(e.streamId());
      line(
          "worker_registered   worker_id="
              + out.getRegistered().getWorkerId()
              + " handlers="
              + (handlers == null || handlers.isEmpty() ? "none" : String.join(",", handlers)));
      return;
    }
    Status status = e.status();
    if (status != null) {
      registering.remove(e.streamId());
      if (e.workerId() != null) {
        String why = status.getDescription();
        line(
            "worker_disconnected worker_id="
                + e.workerId()
                + " status="
                + status.getCode()
                + (why == null || why.isBlank()
                    ? ""
                    : " reason=\"" + why.replace("\"", "'") + "\""));
      }
    }
  }

  private static String key(WorkHandlerAdvertisement h) {
    return h.getVersion().isEmpty() ? h.getTool() : h.getTool() + "@" + h.getVersion();
  }

  /**
   * A session's line ({@code session_started}, its approvals and denials, {@code session_ended}).
   */
  public void session(String text) {
    line(text);
  }

  private void line(String text) {
    String stamped = LocalTime.now(clock).format(TIME) + " " + text;
    synchronized (out) {
      out.println(stamped);
      out.flush();
    }
  }
}
