package dev.phrony.worker.plugin;

import dev.phrony.worker.api.SideEffectClass;
import dev.phrony.worker.api.ToolDescriptor;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * What a descriptor must satisfy to be advertised: a routing key the runtime can match ({@code
 * tool@version}, built from manifest bindings, so no {@code @} or whitespace inside either part), a
 * side-effect class, a sensible concurrency and a schema that is JSON.
 */
final class DescriptorRules {
  private static final Pattern TOOL = Pattern.compile("[A-Za-z0-9._-]+");
  private static final Pattern VERSION = Pattern.compile("[A-Za-z0-9._+-]+");
  private static final String SIDE_EFFECT_CLASSES =
      Arrays.stream(SideEffectClass.values())
          .map(SideEffectClass::wireName)
          .collect(Collectors.joining(", "));

  private DescriptorRules() {}

  /** Every rule {@code d} breaks, as sentences with the fix; empty when it is fine. */
  static List<String> violations(ToolDescriptor d) {
    List<String> out = new ArrayList<>();
    if (d.tool() == null || d.tool().isEmpty()) {
      out.add(
          "tool is empty: name the tool as agent manifests bind it, e.g. "
              + "ToolDescriptor.builder(\"weather.get-forecast\")");
    } else if (!TOOL.matcher(d.tool()).matches()) {
      out.add(
          "tool '"
              + d.tool()
              + "' "
              + offending(d.tool(), TOOL)
              + ": use only letters, digits, '.', '_' and '-'");
    }
    if (!VERSION.matcher(d.version()).matches()) {
      out.add(
          "version '"
              + d.version()
              + "' "
              + offending(d.version(), VERSION)
              + ": use only letters, digits, '.', '_', '+' and '-'");
    }
    if (d.maxConcurrency() < 0) {
      out.add(
          "max concurrency is "
              + d.maxConcurrency()
              + ": use a positive number of calls this host may run at once");
    }
    if (d.sideEffectClass() == null) {
      out.add(
          "no side-effect class: call .sideEffectClass(...) with the strongest that applies ("
              + SIDE_EFFECT_CLASSES
              + ")");
    }
    return out;
  }

  /** Names the first character of {@code s} that {@code allowed} rejects, in words. */
  private static String offending(String s, Pattern allowed) {
    for (int i = 0; i < s.length(); ) {
      int cp = s.codePointAt(i);
      String ch = Character.toString(cp);
      if (!allowed.matcher(ch).matches()) {
        if (cp == '@') {
          return "contains '@', which separates tool and version in the routing key";
        }
        if (Character.isWhitespace(cp) || Character.isISOControl(cp)) {
          return "contains whitespace";
        }
        return "contains '" + ch + "'";
      }
      i += Character.charCount(cp);
    }
    return "is not allowed";
  }
}
