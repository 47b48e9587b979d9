package dev.phrony.worker.transport;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.util.ResourceLeakDetector;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class LeakDetectionTest {
  private ResourceLeakDetector.Level before;

  @BeforeEach
  void remember() {
    before = ResourceLeakDetector.getLevel();
    ResourceLeakDetector.setLevel(ResourceLeakDetector.Level.SIMPLE);
  }

  @AfterEach
  void restore() {
    System.clearProperty("io.netty.leakDetection.level");
    ResourceLeakDetector.setLevel(before);
  }

  @Test
  void a_serving_worker_turns_the_detector_off() {
    LeakDetection.offUnlessSet();

    assertThat(ResourceLeakDetector.getLevel()).isEqualTo(ResourceLeakDetector.Level.DISABLED);
  }

  @Test
  void a_level_the_operator_set_is_kept() {
    System.setProperty("io.netty.leakDetection.level", "simple");

    LeakDetection.offUnlessSet();

    assertThat(ResourceLeakDetector.getLevel()).isEqualTo(ResourceLeakDetector.Level.SIMPLE);
  }
}
