package dev.phrony.worker.plugin;

import java.util.Objects;

/**
 * Why (part of) a plugin is not served.
 *
 * @param plugin the plugin's path (its jar or folder) as found in the plugins directory
 * @param reason what is wrong and how to fix it, in words for the plugin's author or operator
 */
public record LoadProblem(String plugin, String reason) {
  public LoadProblem {
    Objects.requireNonNull(plugin, "plugin");
    Objects.requireNonNull(reason, "reason");
  }
}
