package dev.phrony.worker.agent;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.phrony.worker.contract.PolicyDocument;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;

/**
 * One Policy document as the runtime compiles it into an agent ({@code
 * internal/manifest/policy.go}) and evaluates it before dispatch ({@code internal/policy}).
 *
 * @param name {@code metadata.name} (the runtime keeps one policy per name)
 * @param scope {@code agent} (or empty: every tool) or {@code tool:REF}
 * @param action what it does when it matches
 * @param condition {@code spec.conditions}, none: it matches every call in scope
 * @param allow {@code spec.allow} of an {@code allow} policy
 * @param approval what a human is asked, for {@link Action#REQUIRE_APPROVAL}
 */
public record PolicyRule(
    String name,
    String scope,
    Action action,
    Optional<Condition> condition,
    List<String> allow,
    Approval approval) {

  public PolicyRule {
    allow = List.copyOf(allow);
  }

  /** The decisions dev evaluates. */
  public enum Action {
    /** {@code deny} or {@code block}: the call ends with a tool error, never dispatched. */
    DENY,
    /** {@code require_approval} or {@code escalate}: a human decides before dispatch. */
    REQUIRE_APPROVAL,
    /** {@code allow}: with {@code spec.allow}, a value outside the list is denied. */
    ALLOW
  }

  /**
   * The approval a policy asks for.
   *
   * @param reason {@code decision.reason}
   * @param authorityRef {@code decision.authority_ref}
   * @param approvalsRequired {@code decision.approvals_required}, at least 1
   * @param onModify {@code decision.on_modify}; {@code revalidate} evaluates edited arguments again
   * @param onReject {@code decision.on_reject}; {@code fail} fails the session on a denial
   * @param comprehensionRequired {@code decision.comprehension_required}
   * @param runtime {@code decision.runtime}, passed through ({@code phrony.com/approver_role} is
   *     the route)
   */
  public record Approval(
      String reason,
      String authorityRef,
      int approvalsRequired,
      String onModify,
      String onReject,
      boolean comprehensionRequired,
      ObjectNode runtime) {

    /** The approver role the runtime routes it to, or empty. */
    public String route() {
      for (String key : List.of("phrony.com/approver_role", "approver_role")) {
        JsonNode v = runtime.get(key);
        if (v != null && !v.asText("").isBlank()) {
          return v.asText().strip();
        }
      }
      return "";
    }
  }

  private static final Set<String> DECISION_KEYS =
      Set.of(
          "type",
          "reason",
          "authority_ref",
          "approvals_required",
          "on_modify",
          "on_reject",
          "comprehension_required",
          "runtime");

  /** Whether it applies to calls of the tool {@code toolRef} (the binding's ref, no version). */
  public boolean appliesTo(String toolRef) {
    if (scope.isEmpty() || scope.equals("agent")) {
      return true;
    }
    return scope.substring("tool:".length()).strip().equals(toolRef);
  }

  /**
   * Reads a Policy document.
   *
   * @throws AgentLoadException for a decision or condition dev does not evaluate as the runtime
   *     would, naming the file and the field
   */
  static PolicyRule of(PolicyDocument doc) {
    String at = doc.file() + ":" + doc.body().decisionLine() + ": spec.decision";
    JsonNode decision =
        doc.body()
            .decisionBody()
            .orElseThrow(
                () ->
                    new AgentLoadException(
                        doc.file()
                            + ":"
                            + doc.line()
                            + ": spec.decision: policy "
                            + doc.id()
                            + " has no decision, so the runtime ignores it: give it one (type:"
                            + " deny, require_approval, escalate or allow)"));
    String type = decision.path("type").asText("").strip().toLowerCase(Locale.ROOT);
    Action action =
        switch (type) {
          case "deny", "block" -> Action.DENY;
          case "require_approval", "escalate" -> Action.REQUIRE_APPROVAL;
          case "allow" -> Action.ALLOW;
          default ->
              throw new AgentLoadException(
                  at
                      + ".type: "
                      + (type.isEmpty() ? "missing" : "\"" + type + "\" is not evaluated by dev")
                      + ": dev evaluates deny, block, require_approval, escalate and allow");
        };
    List<String> unknown = new ArrayList<>();
    decision.fieldNames().forEachRemaining(f -> unknown.add(f));
    unknown.removeAll(DECISION_KEYS);
    if (!unknown.isEmpty()) {
      throw new AgentLoadException(
          at
              + "."
              + unknown.getFirst()
              + ": not evaluated by dev ("
              + (unknown.getFirst().equals("timeout")
                  ? "an approval here waits until it is decided or its session cancelled"
                  : "dev reads " + String.join(", ", DECISION_KEYS.stream().sorted().toList()))
              + "): leave it out to run this scenario under dev");
    }
    String scope = doc.scope().orElse("").strip();
    if (!scope.isEmpty() && !scope.equals("agent") && !scope.startsWith("tool:")) {
      throw new AgentLoadException(
          doc.file()
              + ":"
              + doc.line()
              + ": spec.scope: \""
              + scope
              + "\" applies to no call: write agent, or tool:NAMESPACE.NAME");
    }
    Optional<Condition> condition =
        doc.body()
            .conditions()
            .map(
                c ->
                    Condition.parse(
                        c, doc.file() + ":" + doc.body().conditionsLine() + ": spec.conditions"));
    List<String> allow = new ArrayList<>();
    doc.body()
        .allow()
        .ifPresent(
            a -> {
              if (!a.isArray()) {
                throw new AgentLoadException(
                    doc.file() + ":" + doc.line() + ": spec.allow: write a list of values");
              }
              a.forEach(v -> allow.add(v.asText().strip()));
            });
    JsonNode runtime = decision.path("runtime");
    Approval approval =
        new Approval(
            decision.path("reason").asText("").strip(),
            decision.path("authority_ref").asText("").strip(),
            Math.max(1, decision.path("approvals_required").asInt(1)),
            decision.path("on_modify").asText("").strip(),
            decision.path("on_reject").asText("").strip(),
            decision.path("comprehension_required").asBoolean(false),
            runtime.isObject()
                ? (ObjectNode) runtime.deepCopy()
                : JsonNodeFactory.instance.objectNode());
    return new PolicyRule(doc.name().strip(), scope, action, condition, allow, approval);
  }
}
