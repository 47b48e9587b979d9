package dev.phrony.worker.dev;

import static dev.phrony.worker.dev.SessionHub.msg;

import dev.phrony.runtime.v1.RunSessionInteractiveTextDelta;
import dev.phrony.worker.agent.DevAgent;
import dev.phrony.worker.agent.StubScript;
import dev.phrony.worker.dev.SessionCalls.Cancelled;
import dev.phrony.worker.dev.SessionCalls.TurnFailed;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;

/**
 * An agent's scripted model ({@code internal/provider/stub.go}) answering a session's user turns as
 * the runtime's executor asks it ({@code internal/executor}): completions until one ends without
 * {@code tool_use}, each completion's tool calls run by {@link SessionCalls}. The script's turns
 * are completions, consumed in order across the session's user turns.
 */
final class ScriptModel implements Session.Model {
  private final DevAgent agent;
  private final SessionHub hub;
  private final SessionCalls toolCalls;
  private final InstantSource clock;

  /** Completions the script has answered (the driver's). */
  private int completions;

  ScriptModel(DevAgent agent, SessionHub hub, SessionCalls toolCalls, InstantSource clock) {
    this.agent = agent;
    this.hub = hub;
    this.toolCalls = toolCalls;
    this.clock = clock;
  }

  /** One user turn: completions until one ends without {@code tool_use}. */
  @Override
  public void turn(String inputJson, int turn) throws TurnFailed, Cancelled, InterruptedException {
    Instant began = clock.instant();
    StringBuilder text = new StringBuilder();
    List<List<StubScript.Event>> script = agent.script().turns();
    while (true) {
      if (completions >= script.size()) {
        throw new TurnFailed(
            "unexpected completion call "
                + (completions + 1)
                + " (script has "
                + script.size()
                + " turns)");
      }
      String stop = null;
      List<StubScript.ToolCall> calls = new ArrayList<>();
      for (StubScript.Event e : script.get(completions++)) {
        if (hub.cancelling()) {
          throw new Cancelled();
        }
        switch (e) {
          case StubScript.TextDelta t -> {
            if (!t.text().isEmpty()) {
              text.append(t.text());
              hub.publish(
                  msg(
                      b ->
                          b.setTextDelta(
                              RunSessionInteractiveTextDelta.newBuilder().setDelta(t.text()))));
            }
          }
          case StubScript.ToolCall c -> calls.add(c);
          case StubScript.Completed c -> stop = c.stopReason();
          case StubScript.Failed f -> throw new TurnFailed(f.message());
        }
        if (stop != null) {
          break;
        }
      }
      if (stop == null) {
        throw new TurnFailed("model completion ended without a terminal event");
      }
      if (!stop.equals(StubScript.TOOL_USE)) {
        hub.finishTurn(
            Session.userText(inputJson),
            text.toString(),
            stop,
            Duration.between(began, clock.instant()));
        return;
      }
      if (calls.isEmpty()) {
        throw new TurnFailed("model stopped for tool_use without tool calls");
      }
      // As the runtime's executor does, each completion numbers its calls from 0 within the turn:
      // a later completion's call repeats an earlier call id, and the ledger answers it with that
      // call's result, as the runtime's does.
      toolCalls.dispatchAll(calls, turn);
    }
  }
}
