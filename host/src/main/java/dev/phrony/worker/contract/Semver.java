package dev.phrony.worker.contract;

import java.util.Optional;

/**
 * Semantic versions and ref constraints as the runtime reads them (Go's {@code
 * golang.org/x/mod/semver} behind {@code internal/manifest/refs.go}), so a check agrees with the
 * runtime on every edge: a missing {@code v} is added, {@code 1} and {@code 1.2} are short for
 * {@code 1.0.0} and {@code 1.2.0}, build metadata is ignored, and a constraint is a lower bound
 * ({@code 1.0.0}, {@code >=1.0.0}, {@code ~1.0} and {@code <2} all mean "at least"), {@code ^} adds
 * "with the same major version".
 */
public final class Semver {
  private Semver() {}

  /** The parts of a valid version; {@code prerelease} starts with {@code -} or is empty. */
  private record Parsed(String major, String minor, String patch, String prerelease) {}

  /** True if {@code version} (with or without a leading {@code v}) is a valid semantic version. */
  public static boolean isValid(String version) {
    return parse(withV(version)).isPresent();
  }

  /**
   * Whether {@code toolVersion} satisfies {@code constraint}, as the runtime decides when it
   * resolves a ref {@code tool@constraint} against the bundle's Tool document.
   *
   * @return empty when it does (or the constraint is empty), else the runtime's reason
   */
  public static Optional<String> unsatisfied(String tool, String toolVersion, String constraint) {
    String c = constraint == null ? "" : constraint.strip();
    if (c.isEmpty()) {
      return Optional.empty();
    }
    String v = toolVersion == null ? "" : toolVersion.strip();
    if (v.isEmpty()) {
      return Optional.of("tool " + tool + " has no metadata.version");
    }
    Optional<Parsed> tv = parse(withV(v));
    if (tv.isEmpty()) {
      return Optional.of("tool " + tool + " metadata.version " + v + " is not valid semver");
    }
    Optional<Parsed> cv = parse(withV(stripOperators(c)));
    if (cv.isEmpty()) {
      return Optional.of("invalid semver constraint " + c + " on ref " + tool);
    }
    boolean below = compare(tv.get(), cv.get()) < 0;
    boolean otherMajor = c.startsWith("^") && !tv.get().major().equals(cv.get().major());
    return below || otherMajor
        ? Optional.of("tool " + tool + " version " + v + " does not satisfy constraint " + c)
        : Optional.empty();
  }

  private static String stripOperators(String c) {
    int i = 0;
    while (i < c.length() && "^~<>= ".indexOf(c.charAt(i)) >= 0) {
      i++;
    }
    return c.substring(i);
  }

  private static String withV(String v) {
    String s = v == null ? "" : v.strip();
    return s.startsWith("v") ? s : "v" + s;
  }

  private static Optional<Parsed> parse(String v) {
    if (v.length() < 2 || v.charAt(0) != 'v') {
      return Optional.empty();
    }
    int[] at = {1};
    String major = number(v, at);
    if (major == null) {
      return Optional.empty();
    }
    if (at[0] == v.length()) {
      return Optional.of(new Parsed(major, "0", "0", ""));
    }
    if (v.charAt(at[0]) != '.') {
      return Optional.empty();
    }
    at[0]++;
    String minor = number(v, at);
    if (minor == null) {
      return Optional.empty();
    }
    if (at[0] == v.length()) {
      return Optional.of(new Parsed(major, minor, "0", ""));
    }
    if (v.charAt(at[0]) != '.') {
      return Optional.empty();
    }
    at[0]++;
    String patch = number(v, at);
    if (patch == null) {
      return Optional.empty();
    }
    String prerelease = "";
    if (at[0] < v.length() && v.charAt(at[0]) == '-') {
      int end = v.indexOf('+', at[0]);
      end = end < 0 ? v.length() : end;
      prerelease = v.substring(at[0], end);
      if (!identifiers(prerelease.substring(1), true)) {
        return Optional.empty();
      }
      at[0] = end;
    }
    if (at[0] < v.length() && v.charAt(at[0]) == '+') {
      if (!identifiers(v.substring(at[0] + 1), false)) {
        return Optional.empty();
      }
      at[0] = v.length();
    }
    return at[0] == v.length()
        ? Optional.of(new Parsed(major, minor, patch, prerelease))
        : Optional.empty();
  }

  /** Digits at {@code at[0]}, without a leading zero unless alone; null if none. */
  private static String number(String v, int[] at) {
    int start = at[0];
    int i = start;
    while (i < v.length() && Character.isDigit(v.charAt(i))) {
      i++;
    }
    if (i == start || (v.charAt(start) == '0' && i - start > 1)) {
      return null;
    }
    at[0] = i;
    return v.substring(start, i);
  }

  /** Dot-separated non-empty identifiers of [0-9A-Za-z-]; numeric ones without leading zeros. */
  private static boolean identifiers(String s, boolean noLeadingZeros) {
    if (s.isEmpty()) {
      return false;
    }
    for (String id : s.split("\\.", -1)) {
      if (id.isEmpty() || !id.chars().allMatch(c -> c == '-' || Character.isLetterOrDigit(c))) {
        return false;
      }
      if (!id.chars().allMatch(c -> c < 128)) {
        return false;
      }
      if (noLeadingZeros && isNumeric(id) && id.length() > 1 && id.charAt(0) == '0') {
        return false;
      }
    }
    return true;
  }

  private static boolean isNumeric(String id) {
    return id.chars().allMatch(Character::isDigit);
  }

  private static int compare(Parsed a, Parsed b) {
    int c = compareInt(a.major(), b.major());
    if (c == 0) {
      c = compareInt(a.minor(), b.minor());
    }
    if (c == 0) {
      c = compareInt(a.patch(), b.patch());
    }
    return c != 0 ? c : comparePrerelease(a.prerelease(), b.prerelease());
  }

  private static int compareInt(String x, String y) {
    return x.length() != y.length() ? Integer.compare(x.length(), y.length()) : x.compareTo(y);
  }

  private static int comparePrerelease(String x, String y) {
    if (x.equals(y)) {
      return 0;
    }
    if (x.isEmpty()) {
      return 1;
    }
    if (y.isEmpty()) {
      return -1;
    }
    String[] xs = x.substring(1).split("\\.");
    String[] ys = y.substring(1).split("\\.");
    for (int i = 0; i < Math.min(xs.length, ys.length); i++) {
      String a = xs[i];
      String b = ys[i];
      if (a.equals(b)) {
        continue;
      }
      boolean an = isNumeric(a);
      boolean bn = isNumeric(b);
      if (an != bn) {
        return an ? -1 : 1;
      }
      return an ? compareInt(a, b) : a.compareTo(b) < 0 ? -1 : 1;
    }
    return Integer.compare(xs.length, ys.length);
  }
}
