package dev.phrony.worker;

import java.util.List;

/** Plain-text tables for command output. */
public final class TextColumns {
  private TextColumns() {}

  /**
   * Appends {@code rows} as left-aligned columns two spaces apart, one line each; the last column
   * is not padded and no line ends in spaces. Control and bidi characters in a cell are shown as
   * escapes ({@link Printable}).
   */
  public static void append(StringBuilder out, List<List<String>> rows) {
    append(out, rows, false);
  }

  /**
   * The same; with {@code lastRightAligned}, the last column (a size, a count) is aligned right.
   */
  public static void append(StringBuilder out, List<List<String>> rows, boolean lastRightAligned) {
    rows = rows.stream().map(r -> r.stream().map(Printable::of).toList()).toList();
    int[] widths = new int[rows.getFirst().size()];
    for (List<String> row : rows) {
      for (int i = 0; i < row.size(); i++) {
        widths[i] = Math.max(widths[i], row.get(i).length());
      }
    }
    for (List<String> row : rows) {
      StringBuilder line = new StringBuilder();
      for (int i = 0; i < row.size(); i++) {
        boolean last = i == row.size() - 1;
        if (last && lastRightAligned) {
          line.append(" ".repeat(widths[i] - row.get(i).length()));
        }
        line.append(row.get(i));
        if (!last) {
          line.append(" ".repeat(widths[i] - row.get(i).length() + 2));
        }
      }
      out.append(line.toString().stripTrailing()).append('\n');
    }
  }
}
