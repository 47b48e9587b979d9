package dev.phrony.worker.call;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URL;
import java.net.URLClassLoader;
import org.junit.jupiter.api.Test;

class ContextClassLoaderTest {

  @Test
  @SuppressWarnings("try")
  void swaps_and_restores_even_when_the_body_throws() throws Exception {
    ClassLoader before = Thread.currentThread().getContextClassLoader();
    try (URLClassLoader other = new URLClassLoader(new URL[0], null)) {
      try (var swap = ContextClassLoader.swap(other)) {
        assertThat(Thread.currentThread().getContextClassLoader()).isSameAs(other);
        throw new IllegalStateException("handler failed");
      } catch (IllegalStateException expected) {
        assertThat(Thread.currentThread().getContextClassLoader()).isSameAs(before);
      }
    }
  }
}
