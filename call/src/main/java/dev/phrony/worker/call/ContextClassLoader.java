package dev.phrony.worker.call;

/**
 * Sets the current thread's context classloader and puts the previous one back on close:
 *
 * <pre>{@code
 * try (var ignored = ContextClassLoader.swap(entry.classLoader())) {
 *   entry.handler().handle(call);
 * }
 * }</pre>
 *
 * <p>With {@code -Xlint:all}, the unreferenced resource variable draws a {@code try} warning on
 * Java 21; annotate the method with {@code @SuppressWarnings("try")}.
 *
 * <p>Plugin code (and the libraries it bundles) often looks classes and resources up through the
 * context classloader; it must see the plugin's own, not the host's.
 */
public final class ContextClassLoader implements AutoCloseable {
  private final Thread thread;
  private final ClassLoader previous;

  private ContextClassLoader(Thread thread, ClassLoader previous) {
    this.thread = thread;
    this.previous = previous;
  }

  /** Makes {@code loader} the current thread's context classloader until {@link #close()}. */
  public static ContextClassLoader swap(ClassLoader loader) {
    Thread current = Thread.currentThread();
    ContextClassLoader swap = new ContextClassLoader(current, current.getContextClassLoader());
    current.setContextClassLoader(loader);
    return swap;
  }

  /** Restores the previous context classloader (of the thread that swapped). */
  @Override
  public void close() {
    thread.setContextClassLoader(previous);
  }
}
