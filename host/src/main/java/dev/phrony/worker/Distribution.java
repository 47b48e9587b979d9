package dev.phrony.worker;

/** Where the running distribution lives, as the launcher tells it. */
public final class Distribution {
  /**
   * System property {@code bin/phrony-worker} sets to the distribution's root folder; its {@code
   * plugins/}, {@code conf/} and {@code state/} are the defaults of the matching options. Unset
   * when the host runs outside a distribution (tests, IDE).
   */
  public static final String HOME_PROPERTY = "phrony.home";

  private Distribution() {}
}
