package dev.phrony.worker.contract;

import java.nio.file.Path;
import java.util.Objects;

/**
 * Something about a manifest, a Tool or Policy document or a bundle that the runtime would refuse
 * ({@link Severity#ERROR}) or that works but deserves a look ({@link Severity#WARNING}), with the
 * file and line it is on and how to fix it.
 *
 * @param severity error or warning
 * @param code what kind of problem, for programs: {@code version_outside_constraint}, {@code
 *     tool_not_in_bundle}, {@code unknown_side_effect_class}, or {@code manifest_error} and {@code
 *     warning} for the rest
 * @param file the file it is in
 * @param line the line, from 1 (0 when it is about the whole file)
 * @param where the field, e.g. {@code spec.tools[0].ref}, or empty
 * @param message what is wrong
 * @param fix what to do about it
 */
public record Problem(
    Severity severity, String code, Path file, int line, String where, String message, String fix) {

  /** A ref's constraint that its Tool document's version does not satisfy. */
  public static final String VERSION_OUTSIDE_CONSTRAINT = "version_outside_constraint";

  /** A ref with a constraint whose tool is not in the bundle's {@code tools/}. */
  public static final String TOOL_NOT_IN_BUNDLE = "tool_not_in_bundle";

  /** A side-effect class that is none of the four. */
  public static final String UNKNOWN_SIDE_EFFECT_CLASS = "unknown_side_effect_class";

  /** Whether the runtime would refuse it. */
  public enum Severity {
    /** The runtime refuses the manifest (at publish or when it resolves the bundle). */
    ERROR,
    /** It works, but differs from what a reader would expect. */
    WARNING;

    /** {@code error}, {@code warning}. */
    public String wireName() {
      return name().toLowerCase(java.util.Locale.ROOT);
    }
  }

  public Problem {
    Objects.requireNonNull(severity, "severity");
    Objects.requireNonNull(code, "code");
    Objects.requireNonNull(file, "file");
    where = where == null ? "" : where;
    Objects.requireNonNull(message, "message");
    fix = fix == null ? "" : fix;
  }

  static Problem error(Path file, int line, String where, String message, String fix) {
    return new Problem(Severity.ERROR, "manifest_error", file, line, where, message, fix);
  }

  static Problem warning(Path file, int line, String where, String message, String fix) {
    return new Problem(Severity.WARNING, "warning", file, line, where, message, fix);
  }

  /** The same problem with another {@link #code()}. */
  Problem withCode(String code) {
    return new Problem(severity, code, file, line, where, message, fix);
  }

  public boolean isError() {
    return severity == Severity.ERROR;
  }

  /** {@code FILE:LINE}, or the file alone. */
  public String place() {
    return line > 0 ? file + ":" + line : file.toString();
  }

  /** {@code FILE:LINE: WHERE: MESSAGE: FIX}, one line. */
  public String text() {
    return place()
        + ": "
        + (where.isEmpty() ? "" : where + ": ")
        + message
        + (fix.isEmpty() ? "" : ": " + fix);
  }
}
