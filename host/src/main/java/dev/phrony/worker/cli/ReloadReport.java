package dev.phrony.worker.cli;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.phrony.worker.HostJson;
import dev.phrony.worker.ops.OpsHttpServer;
import dev.phrony.worker.reload.PluginReloader;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The plugin routes of the HTTP endpoint: {@code GET /handlers} is {@code list-handlers --format
 * json} of the generation served now, plus {@code generation} and {@code loaded_at}; {@code POST
 * /plugins/reload} answers with the reload's outcome.
 */
final class ReloadReport {
  private static final ObjectMapper JSON = HostJson.MAPPER;

  /** How long {@code POST /plugins/reload} waits for the new set to be served. */
  private static final long RELOAD_WAIT_S = 60;

  private ReloadReport() {}

  static OpsHttpServer.Plugins routes(PluginReloader reloader) {
    return new OpsHttpServer.Plugins() {
      @Override
      public String handlersJson() {
        return handlers(reloader.served());
      }

      @Override
      public OpsHttpServer.Reply reload() {
        try {
          PluginReloader.Outcome o =
              reloader.reload("POST /plugins/reload").get(RELOAD_WAIT_S, TimeUnit.SECONDS);
          int status =
              switch (o.result()) {
                case RELOADED, UNCHANGED -> 200;
                case REFUSED -> 409;
                case FAILED -> 500;
              };
          return new OpsHttpServer.Reply(status, outcome(o));
        } catch (TimeoutException e) {
          return new OpsHttpServer.Reply(
              504,
              error(
                  "the reload is still running after "
                      + RELOAD_WAIT_S
                      + " s; GET /handlers shows what is served"));
        } catch (ExecutionException e) {
          return new OpsHttpServer.Reply(500, error("the reload failed: " + e.getCause()));
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return new OpsHttpServer.Reply(503, error("interrupted"));
        }
      }
    };
  }

  /** {@code list-handlers} JSON of {@code served}, with its generation and load time. */
  static String handlers(PluginReloader.Served served) {
    ObjectNode root =
        tree(
            LoadReport.json(
                served.loaded(), served.applied().effective(), served.applied().warnings()));
    root.put("generation", served.generation());
    root.put("loaded_at", served.loadedAt().toString());
    return write(root);
  }

  static String outcome(PluginReloader.Outcome o) {
    ObjectNode root = JSON.createObjectNode();
    root.put("outcome", o.result().label());
    root.put("generation", o.generation());
    root.putPOJO("added", o.change().added());
    root.putPOJO("replaced", o.change().replaced());
    root.putPOJO("removed", o.change().removed());
    root.put("advertisement_changed", o.change().advertisementChanged());
    var problems = root.putArray("problems");
    o.problems()
        .forEach(p -> problems.addObject().put("plugin", p.plugin()).put("reason", p.reason()));
    root.put("message", o.message());
    return write(root);
  }

  private static String error(String message) {
    ObjectNode root = JSON.createObjectNode();
    root.put("outcome", "error");
    root.put("message", message);
    return write(root);
  }

  private static ObjectNode tree(String json) {
    try {
      JsonNode n = JSON.readTree(json);
      return (ObjectNode) n;
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("LoadReport writes JSON", e);
    }
  }

  private static String write(JsonNode n) {
    try {
      return JSON.writeValueAsString(n) + "\n";
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("a tree of strings and numbers always serializes", e);
    }
  }
}
