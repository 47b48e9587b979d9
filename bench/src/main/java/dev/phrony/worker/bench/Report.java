package dev.phrony.worker.bench;

import dev.phrony.worker.Printable;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** The rows of one bench run, printed as a table and written as JSON. */
final class Report {

  /**
   * One line of the table.
   *
   * @param id short id ("2b")
   * @param scenario what ran
   * @param result the figures, formatted for people
   * @param ratio the figure that the goal is about, as a ratio or value; null when none
   * @param goal the goal, as text (empty when the row is a reference)
   * @param met whether the goal was met; null when there is none or it could not be measured
   * @param figures the same figures, as numbers, for the JSON file
   */
  record Row(
      String id,
      String scenario,
      String result,
      String ratio,
      String goal,
      Boolean met,
      Map<String, Object> figures) {}

  final Map<String, Object> meta = new LinkedHashMap<>();
  final List<Row> rows = new ArrayList<>();

  void add(Row row) {
    rows.add(row);
    System.err.printf(
        Locale.ROOT,
        "bench: %-4s %-44s %s  %s%n",
        row.id(),
        row.scenario(),
        row.result(),
        row.ratio());
  }

  void print(PrintStream out) {
    String[] head = {"#", "SCENARIO", "RESULT", "RATIO / FIGURE", "GOAL", "MET"};
    List<String[]> lines = new ArrayList<>();
    lines.add(head);
    for (Row r : rows) {
      lines.add(
          new String[] {
            r.id(),
            r.scenario(),
            r.result(),
            r.ratio(),
            r.goal(),
            r.met() == null ? "-" : r.met() ? "yes" : "NO"
          });
    }
    int[] w = new int[head.length];
    for (String[] l : lines) {
      for (int i = 0; i < l.length; i++) {
        w[i] = Math.max(w[i], l[i].length());
      }
    }
    for (String[] l : lines) {
      StringBuilder b = new StringBuilder();
      for (int i = 0; i < l.length; i++) {
        b.append(i == l.length - 1 ? l[i] : pad(l[i], w[i] + 2));
      }
      out.println(b.toString().stripTrailing());
    }
  }

  void writeJson(Path file) throws IOException {
    Map<String, Object> doc = new LinkedHashMap<>(meta);
    List<Object> rs = new ArrayList<>();
    for (Row r : rows) {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("id", r.id());
      m.put("scenario", r.scenario());
      m.put("result", r.result());
      m.put("ratio", r.ratio());
      m.put("goal", r.goal());
      m.put("met", r.met());
      m.put("figures", r.figures());
      rs.add(m);
    }
    doc.put("rows", rs);
    Files.createDirectories(file.toAbsolutePath().getParent());
    Files.writeString(file, json(doc) + "\n");
  }

  /** Figures for a row's JSON, in the order given: name, value, name, value... */
  static Map<String, Object> figures(Object... kv) {
    Map<String, Object> m = new LinkedHashMap<>();
    for (int i = 0; i < kv.length; i += 2) {
      m.put((String) kv[i], kv[i + 1]);
    }
    return m;
  }

  private static String pad(String s, int n) {
    return s.length() >= n ? s : s + " ".repeat(n - s.length());
  }

  static String json(Object o) {
    StringBuilder b = new StringBuilder();
    json(o, b, "");
    return b.toString();
  }

  private static void json(Object o, StringBuilder b, String indent) {
    switch (o) {
      case null -> b.append("null");
      case Boolean x -> b.append(x);
      case Double d ->
          b.append(
              d.isNaN() || d.isInfinite()
                  ? "null"
                  : String.format(Locale.ROOT, "%.4f", d)
                      .replaceAll("0+$", "")
                      .replaceAll("\\.$", ""));
      case Number n -> b.append(n);
      case Map<?, ?> m -> {
        b.append("{");
        String in = indent + "  ";
        boolean first = true;
        for (Map.Entry<?, ?> e : m.entrySet()) {
          b.append(first ? "\n" : ",\n").append(in);
          first = false;
          Printable.appendQuoted(b, String.valueOf(e.getKey()));
          b.append(": ");
          json(e.getValue(), b, in);
        }
        b.append(first ? "}" : "\n" + indent + "}");
      }
      case List<?> l -> {
        b.append("[");
        String in = indent + "  ";
        for (int i = 0; i < l.size(); i++) {
          b.append(i == 0 ? "\n" : ",\n").append(in);
          json(l.get(i), b, in);
        }
        b.append(l.isEmpty() ? "]" : "\n" + indent + "]");
      }
      default -> Printable.appendQuoted(b, o.toString());
    }
  }
}
