package dev.phrony.worker.plugin;

import static dev.phrony.worker.plugin.PluginLoader.SERVICES_FILE;

import dev.phrony.worker.api.ToolDescriptor;
import dev.phrony.worker.api.ToolHandler;
import dev.phrony.worker.call.ArgsCheck;
import dev.phrony.worker.call.InputSchemas;
import dev.phrony.worker.call.SchemaCheck;
import dev.phrony.worker.isolation.PluginClassLoader;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.lang.reflect.InvocationTargetException;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.ServiceConfigurationError;
import java.util.ServiceLoader;
import java.util.Set;
import java.util.Spliterator;

/**
 * The handlers of one plugin, found in its classloader as {@link PluginLoader} asks: the classes
 * its {@value PluginLoader#SERVICES_FILE} lists, each created, described and checked, and every way
 * that fails turned into a reason a person can act on (which class, what went wrong, the fix). Runs
 * with the plugin's classloader as the thread's context classloader.
 */
final class HandlerDiscovery {
  private static final String MISSING_CLASS_HINT =
      "bundle every class and library the handler "
          + "needs in the plugin (in its jar, or in lib/ of a plugin folder)";

  /** Bounds a services lookup that keeps failing the same way (e.g. an unreadable jar). */
  private static final int MAX_ERRORS_PER_PLUGIN = 50;

  private HandlerDiscovery() {}

  /** Runs the plugin's ServiceLoader, turning every failure into a reason. */
  static void discover(
      PluginClassLoader loader,
      String id,
      List<String> reasons,
      List<HandlerCatalog.Entry> entries) {
    Spliterator<ServiceLoader.Provider<ToolHandler>> providers =
        ServiceLoader.load(ToolHandler.class, loader).stream().spliterator();
    Set<String> accounted = new LinkedHashSet<>(); // listed classes already loaded or reported
    int errors = 0;
    while (true) {
      List<ServiceLoader.Provider<ToolHandler>> next = new ArrayList<>(1);
      try {
        if (!providers.tryAdvance(next::add)) {
          return;
        }
      } catch (ServiceConfigurationError | LinkageError | RuntimeException e) {
        // The lookup iterator moves past the failing class, so the loop can go on.
        reasons.add(classLoadReason(e, loader, accounted));
        if (++errors >= MAX_ERRORS_PER_PLUGIN) {
          reasons.add("stopped after " + errors + " errors");
          return;
        }
        continue;
      }
      ServiceLoader.Provider<ToolHandler> provider = next.getFirst();
      accounted.add(provider.type().getName());
      entry(provider, loader, id, reasons).ifPresent(entries::add);
    }
  }

  /** Why a class listed in the services file could not be loaded. */
  private static String classLoadReason(
      Throwable e, PluginClassLoader loader, Set<String> accounted) {
    String prefix = "cannot load a handler listed in " + SERVICES_FILE + ": ";
    if (e instanceof ServiceConfigurationError sce) {
      String detail = stripService(sce.getMessage());
      String hint;
      if (detail.endsWith(" not found")) {
        hint = "list only classes that are in the plugin, by fully qualified name";
      } else if (detail.endsWith(" not a subtype")) {
        hint = "the class must implement dev.phrony.worker.api.ToolHandler";
      } else if (detail.contains("constructor") || detail.contains("not public")) {
        hint = "the class must be public and have a public no-argument constructor";
      } else {
        hint = Optional.ofNullable(hint(sce)).orElse("check the classes it lists");
      }
      return prefix
          + detail
          + (sce.getCause() == null ? "" : " (" + describe(sce.getCause()) + ")")
          + ": "
          + hint;
    }
    // A raw LinkageError from defining the class does not say which class; find it.
    Optional<String> culprit = firstUnloadable(loader, accounted);
    culprit.ifPresent(accounted::add);
    return culprit.map(c -> "handler " + c + " cannot be loaded: ").orElse(prefix)
        + describe(e)
        + ": "
        + Optional.ofNullable(hint(e)).orElse(MISSING_CLASS_HINT);
  }

  /** The first listed class, not yet accounted for, whose loading fails with a LinkageError. */
  private static Optional<String> firstUnloadable(PluginClassLoader loader, Set<String> accounted) {
    for (String name : listedClasses(loader)) {
      if (accounted.contains(name)) {
        continue;
      }
      try {
        Class.forName(name, false, loader);
      } catch (LinkageError e) {
        return Optional.of(name);
      } catch (ClassNotFoundException e) {
        // reported by ServiceLoader on its own, with the name
      }
    }
    return Optional.empty();
  }

  /** Class names in the plugin's own services files, as ServiceLoader reads them. */
  private static List<String> listedClasses(PluginClassLoader loader) {
    Set<String> names = new LinkedHashSet<>();
    try {
      for (URL url : Collections.list(loader.findResources(SERVICES_FILE))) {
        try (BufferedReader r =
            new BufferedReader(new InputStreamReader(url.openStream(), StandardCharsets.UTF_8))) {
          r.lines()
              .map(l -> l.indexOf('#') >= 0 ? l.substring(0, l.indexOf('#')) : l)
              .map(String::strip)
              .filter(l -> !l.isEmpty())
              .forEach(names::add);
        }
      }
    } catch (IOException e) {
      return List.of(); // only used to name a class in a message
    }
    return List.copyOf(names);
  }

  /** Instantiates, describes and validates one handler. */
  private static Optional<HandlerCatalog.Entry> entry(
      ServiceLoader.Provider<ToolHandler> provider,
      PluginClassLoader loader,
      String id,
      List<String> reasons) {
    String cls = provider.type().getName();
    ToolHandler handler;
    try {
      handler = provider.get();
    } catch (ServiceConfigurationError | LinkageError | RuntimeException e) {
      reasons.add(
          "handler "
              + cls
              + " could not be created: "
              + describe(e)
              + ": "
              + Optional.ofNullable(hint(e))
                  .orElse("its public no-argument constructor must not throw"));
      return Optional.empty();
    }

    ToolDescriptor d;
    try {
      d = handler.descriptor();
      if (d != null) {
        d = InputSchemas.effective(handler, d); // a typed handler's schema, from its record
      }
    } catch (IllegalArgumentException e) {
      reasons.add("invalid descriptor from handler " + cls + ": " + e.getMessage());
      return Optional.empty();
    } catch (LinkageError | RuntimeException e) {
      reasons.add(
          "descriptor() of handler "
              + cls
              + " threw "
              + describe(e)
              + ": "
              + Optional.ofNullable(hint(e)).orElse("it must return a descriptor without failing"));
      return Optional.empty();
    }
    if (d == null) {
      reasons.add(
          "invalid descriptor from handler "
              + cls
              + ": descriptor() returned null; "
              + "return ToolDescriptor.builder(\"tool\")...build()");
      return Optional.empty();
    }

    List<String> violations = new ArrayList<>(DescriptorRules.violations(d));
    String hash = null;
    ArgsCheck argsCheck = ArgsCheck.NONE;
    try {
      hash = DescriptorHash.of(d);
      argsCheck = SchemaCheck.of(d.inputSchema()); // compiled once, here
    } catch (IllegalArgumentException e) {
      violations.add(
          e.getMessage()
              + ": pass JSON Schema (2020-12 unless $schema names another"
              + " dialect) to inputSchema(...)");
    }
    if (!violations.isEmpty()) {
      // The key it would have served, so a call for it can be told why it is missing.
      reasons.add(
          "invalid descriptor from handler "
              + cls
              + ": "
              + String.join("; ", violations)
              + (d.tool() == null || d.tool().isEmpty()
                  ? ""
                  : " (it would serve " + d.key() + ")"));
      return Optional.empty();
    }
    if (d.maxConcurrency() == 0) {
      // The runtime reads 0 as 1; say so everywhere instead of advertising a surprise.
      d =
          new ToolDescriptor(
              d.tool(),
              d.version(),
              d.contractVersion(),
              1,
              d.sideEffectClass(),
              d.description(),
              d.inputSchema());
    }
    return Optional.of(new HandlerCatalog.Entry(d, handler, loader, id, hash, argsCheck));
  }

  /** {@code Class: message} of a throwable and its causes, skipping reflective wrappers. */
  static String describe(Throwable t) {
    List<String> parts = new ArrayList<>();
    Throwable c = t;
    for (int depth = 0; c != null && depth < 6; depth++) {
      if (!(c instanceof ServiceConfigurationError) && !(c instanceof InvocationTargetException)) {
        parts.add(
            c.getMessage() == null
                ? c.getClass().getName()
                : c.getClass().getName() + ": " + c.getMessage());
      }
      c = c.getCause() == c ? null : c.getCause();
    }
    return parts.isEmpty() ? t.toString() : String.join(", caused by ", parts);
  }

  /** A fix for the first cause that suggests one, or null. */
  private static String hint(Throwable t) {
    for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
      if (c instanceof ExceptionInInitializerError) {
        return "fix its static initialization (static fields and blocks must not throw)";
      }
      if (c instanceof NoClassDefFoundError || c instanceof ClassNotFoundException) {
        return MISSING_CLASS_HINT;
      }
      if (c instanceof LinkageError) {
        return "a library it uses differs from the one it was compiled against: bundle the "
            + "same versions in the plugin";
      }
    }
    return null;
  }

  private static String stripService(String message) {
    String prefix = ToolHandler.class.getName() + ": ";
    String m =
        message != null && message.startsWith(prefix)
            ? message.substring(prefix.length())
            : String.valueOf(message);
    return m.startsWith("Provider ") ? "class " + m.substring("Provider ".length()) : m;
  }
}
