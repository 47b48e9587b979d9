package dev.phrony.worker.plugin;

import dev.phrony.worker.api.SideEffectClass;
import dev.phrony.worker.api.ToolCall;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Optional;

/** A {@link ToolCall} with fixed values and raw arguments, for calling handlers directly. */
record FakeCall(byte[] argsBytes) implements ToolCall {

  static FakeCall withArgs(String args) {
    return new FakeCall(args.getBytes(StandardCharsets.UTF_8));
  }

  @Override
  public String callId() {
    return "s:a:1:0";
  }

  @Override
  public String sessionId() {
    return "s";
  }

  @Override
  public String agentVersionId() {
    return "a";
  }

  @Override
  public int turn() {
    return 1;
  }

  @Override
  public String tool() {
    return "probe";
  }

  @Override
  public String version() {
    return "1";
  }

  @Override
  public Optional<SideEffectClass> sideEffectClass() {
    return Optional.empty();
  }

  @Override
  public Optional<Instant> deadline() {
    return Optional.empty();
  }

  @Override
  public <T> T args(Class<T> type) {
    throw new UnsupportedOperationException("raw args only");
  }

  @Override
  public boolean isCancelled() {
    return false;
  }
}
