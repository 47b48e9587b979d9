package dev.phrony.worker.dist;

import dev.phrony.worker.testkit.Call;
import dev.phrony.worker.testkit.LocalRuntime;
import dev.phrony.worker.testkit.Outcome;
import dev.phrony.worker.testkit.WorkerView;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link ReloadScenario} against a {@link LocalRuntime}: jars copied in, replaced and removed under
 * load are served live, and no call fails. LocalRuntime shows each registration, so routing is read
 * from them: a key is out of routing when no registration the runtime would route to advertises it.
 */
class PluginReloadIT {
  @TempDir Path tmp;

  /** {@link ReloadScenario.Target} over a LocalRuntime, read through its registrations. */
  private record Local(LocalRuntime rt) implements ReloadScenario.Target {
    @Override
    public String address() {
      return rt.target();
    }

    @Override
    public CompletableFuture<ReloadScenario.Reply> dispatch(String key) {
      int at = key.indexOf('@');
      return rt.dispatch(Call.of(key.substring(0, at), key.substring(at + 1), ReloadScenario.ARGS))
          .thenApply(
              o ->
                  new ReloadScenario.Reply(
                      o instanceof Outcome.Result, o.text(), o.trace().workerId(), o));
    }

    @Override
    public boolean connected(String workerId) {
      return rt.worker(workerId).filter(WorkerView::connected).isPresent();
    }

    @Override
    public boolean onlyOpen(String workerId) {
      return rt.workers().stream()
          .filter(WorkerView::connected)
          .map(WorkerView::workerId)
          .toList()
          .equals(List.of(workerId));
    }

    @Override
    public long registers() {
      return rt.events().stream().filter(e -> "register".equals(e.type())).count();
    }

    /** Whether a registration the runtime would route to now advertises {@code key}. */
    @Override
    public boolean routes(String key) {
      return rt.workers().stream()
          .anyMatch(
              w ->
                  w.connected()
                      && !w.leaseExpired()
                      && w.handlers().stream().anyMatch(h -> h.key().equals(key)));
    }

    @Override
    public Duration outOfRoutingWithin() {
      return ReloadScenario.TTL.plusSeconds(2);
    }

    /** Every registration: stream, state, in-flight calls and keys. */
    @Override
    public String describe() {
      StringBuilder sb = new StringBuilder();
      for (WorkerView w : rt.workers()) {
        sb.append(
            String.format(
                "%n  %s stream=%d connected=%s leaseExpired=%s inFlight=%d %s",
                w.workerId(),
                w.streamId(),
                w.connected(),
                w.leaseExpired(),
                w.inFlight(),
                w.handlers().stream().map(WorkerView.HandlerView::key).toList()));
      }
      return sb.toString();
    }
  }

  @Test
  void jars_copied_in_replaced_and_removed_under_load_are_served_live_and_no_call_fails()
      throws Exception {
    try (LocalRuntime rt = LocalRuntime.builder().port(0).leaseTtl(ReloadScenario.TTL).start()) {
      ReloadScenario.run("PluginReloadIT", tmp, "reload-1", new Local(rt));
    }
  }
}
