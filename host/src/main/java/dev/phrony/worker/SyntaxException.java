package dev.phrony.worker;

/**
 * Text that does not parse (the JSON of a call, the YAML of a manifest): what is wrong, and where.
 * The message says both, {@code PROBLEM at line L, column C}; callers that word the place
 * themselves take {@link #problem()}, {@link #line()} and {@link #column()}.
 */
public final class SyntaxException extends IllegalArgumentException {
  private static final long serialVersionUID = 1L;
  private final String problem;
  private final int line;
  private final int column;

  /**
   * @param problem what is wrong, one line
   * @param line where, from 1 (0 when the parser could not tell)
   * @param column where on the line, from 1 (0 when the parser could not tell)
   */
  public SyntaxException(String problem, int line, int column) {
    super(problem + " at line " + line + ", column " + column);
    this.problem = problem;
    this.line = line;
    this.column = column;
  }

  public String problem() {
    return problem;
  }

  public int line() {
    return line;
  }

  public int column() {
    return column;
  }
}
