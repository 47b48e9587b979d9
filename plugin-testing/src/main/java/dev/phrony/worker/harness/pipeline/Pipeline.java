package dev.phrony.worker.harness.pipeline;

import dev.phrony.worker.api.ToolHandler;
import dev.phrony.worker.call.CallPipeline;
import dev.phrony.worker.call.ContextClassLoader;
import dev.phrony.worker.call.JsonCodec;
import dev.phrony.worker.harness.HandlerHarness;
import dev.phrony.worker.harness.HarnessPipeline;
import dev.phrony.worker.isolation.PluginClassLoader;
import java.io.IOException;
import java.lang.reflect.InvocationTargetException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.ServiceLoader;
import java.util.function.Function;

/**
 * The harness's side of its loader boundary, loaded with the worker's call pipeline and its Jackson
 * (never the test's): it loads handlers as the worker does, in a {@link PluginClassLoader} whose
 * host is this side's loader, so that the pipeline's Jackson and the handler's records see the same
 * Jackson annotations, as in the worker. One per JVM.
 */
public final class Pipeline implements HarnessPipeline {
  private final CallPipeline pipeline =
      new CallPipeline(
          new JsonCodec(),
          new CallPipeline.Settings(HandlerHarness.DEFAULT_MAX_RESULT_BYTES, false));

  @Override
  public Handler load(String className, List<Path> classpath) {
    return loaded(
        className,
        classpath,
        loader -> {
          try {
            return (ToolHandler)
                Class.forName(className, true, loader).getConstructor().newInstance();
          } catch (InvocationTargetException e) {
            throw new IllegalStateException(
                "handler "
                    + className
                    + " could not be created: its "
                    + "constructor threw "
                    + e.getCause(),
                e.getCause());
          } catch (ReflectiveOperationException | LinkageError e) {
            throw new IllegalStateException(
                "handler "
                    + className
                    + " cannot be loaded from the "
                    + "test class path as the worker loads it: "
                    + e,
                e);
          }
        });
  }

  @Override
  public Handler discover(String key, List<Path> classpath) {
    return loaded(
        key,
        classpath,
        loader -> {
          List<String> found = new ArrayList<>();
          for (ToolHandler h : ServiceLoader.load(ToolHandler.class, loader)) {
            String served = h.descriptor().key();
            if (served.equals(key)) {
              return h;
            }
            found.add(served + " (" + h.getClass().getName() + ")");
          }
          throw new IllegalArgumentException(
              "no handler on the test class path serves "
                  + key
                  + (found.isEmpty()
                      ? ": none is listed in META-INF/services/" + ToolHandler.class.getName()
                      : "; found " + String.join(", ", found)));
        });
  }

  @Override
  public Handler adopt(ToolHandler handler) {
    return new LoadedHandler(pipeline, handler, handler.getClass().getClassLoader(), () -> {});
  }

  /** A handler made by {@code create} in a new plugin loader over {@code classpath}. */
  @SuppressWarnings("try")
  private Handler loaded(
      String what, List<Path> classpath, Function<ClassLoader, ToolHandler> create) {
    PluginClassLoader loader =
        new PluginClassLoader("harness " + what, classpath, Pipeline.class.getClassLoader());
    try (var tccl = ContextClassLoader.swap(loader)) { // as the worker loads a plugin
      return new LoadedHandler(pipeline, create.apply(loader), loader, loader::close);
    } catch (RuntimeException | Error e) {
      try {
        loader.close();
      } catch (IOException closing) {
        e.addSuppressed(closing);
      }
      throw e;
    }
  }
}
