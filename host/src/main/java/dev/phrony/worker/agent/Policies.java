package dev.phrony.worker.agent;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.List;
import java.util.Optional;

/**
 * An agent's policies, evaluated before each dispatch as the runtime's {@code Evaluator} does:
 * every policy in scope whose conditions match counts, a {@code deny} wins at once, a failed
 * allow-list check denies, and otherwise the first matching approval (one that names a reason or a
 * route preferred) holds the call for a human.
 */
public record Policies(List<PolicyRule> rules) {

  public static final Policies NONE = new Policies(List.of());

  public Policies {
    rules = List.copyOf(rules);
  }

  /** What happens to a call. */
  public sealed interface Decision {}

  /** It is dispatched. */
  public record Allow() implements Decision {}

  /** It ends with the tool error {@code message}, never dispatched. */
  public record Deny(String message) implements Decision {}

  /** A human decides first. */
  public record RequireApproval(PolicyRule rule) implements Decision {}

  /**
   * The decision for a call of {@code toolRef} (the binding's tool, e.g. {@code
   * payments.process-payment}) with {@code args}.
   */
  public Decision evaluate(String toolRef, JsonNode args) {
    Optional<PolicyRule> approval = Optional.empty();
    for (PolicyRule p : rules) {
      if (!p.appliesTo(toolRef) || !p.condition().map(c -> c.matches(args)).orElse(true)) {
        continue;
      }
      switch (p.action()) {
        case DENY -> {
          return new Deny(
              p.approval().reason().isEmpty()
                  ? "tool call blocked by policy " + p.name()
                  : p.approval().reason());
        }
        case REQUIRE_APPROVAL -> {
          if (approval.isEmpty() || preferred(approval.get(), p)) {
            approval = Optional.of(p);
          }
        }
        case ALLOW -> {
          Optional<String> denied = allowList(p, args);
          if (denied.isPresent()) {
            return new Deny(denied.get());
          }
        }
      }
    }
    return approval.<Decision>map(RequireApproval::new).orElse(new Allow());
  }

  private static boolean preferred(PolicyRule current, PolicyRule next) {
    return current.approval().reason().isEmpty() && !next.approval().reason().isEmpty()
        || current.approval().route().isEmpty() && !next.approval().route().isEmpty();
  }

  /** The runtime's allow-list check: the first of a few well-known fields, else any string. */
  private static Optional<String> allowList(PolicyRule p, JsonNode args) {
    if (p.allow().isEmpty()) {
      return Optional.empty();
    }
    Optional<String> value = Optional.empty();
    if (args.isObject()) {
      for (String key : List.of("queue", "target", "value", "name", "id", "currency")) {
        value = allowValue(args.get(key));
        if (value.isPresent()) {
          break;
        }
      }
      if (value.isEmpty()) {
        for (JsonNode v : args) {
          value = allowValue(v);
          if (value.isPresent()) {
            break;
          }
        }
      }
    }
    if (value.isEmpty()) {
      return Optional.of("tool arguments do not include a value to check against the allow list");
    }
    String v = value.get();
    return p.allow().stream().anyMatch(a -> a.equalsIgnoreCase(v))
        ? Optional.empty()
        : Optional.of("value " + v + " is not allowed by policy " + p.name());
  }

  private static Optional<String> allowValue(JsonNode v) {
    if (v == null) {
      return Optional.empty();
    }
    if (v.isTextual() && !v.asText().isBlank()) {
      return Optional.of(v.asText().strip());
    }
    if (v.isNumber()) {
      return Optional.of(AgentJson.number(v.doubleValue()));
    }
    return Optional.empty();
  }
}
