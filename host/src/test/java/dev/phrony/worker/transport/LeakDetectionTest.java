package dev.phrony.worker.transport;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.util.ResourceLeakDetector;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class LeakDetectionTest {
  private static final String LEVEL = "io.netty.leakDetection.level";

  private ResourceLeakDetector.Level before;
  private String levelGiven;

  /** Each test starts with no level given and the detector at Netty's default. */
  @BeforeEach
  void remember() {
    before = ResourceLeakDetector.getLevel();
    levelGiven = System.clearProperty(LEVEL);
    ResourceLeakDetector.setLevel(ResourceLeakDetector.Level.SIMPLE);
  }

  /** The level and property as they were: this JVM's other tests keep theirs. */
  @AfterEach
  void restore() {
    if (levelGiven == null) {
      System.clearProperty(LEVEL);
    } else {
      System.setProperty(LEVEL, levelGiven);
    }
    ResourceLeakDetector.setLevel(before);
  }

  @Test
  void a_serving_worker_turns_the_detector_off() {
    LeakDetection.offUnlessSet();

    assertThat(ResourceLeakDetector.getLevel()).isEqualTo(ResourceLeakDetector.Level.DISABLED);
  }

  @Test
  void a_level_the_operator_set_is_kept() {
    System.setProperty(LEVEL, "simple");

    LeakDetection.offUnlessSet();

    assertThat(ResourceLeakDetector.getLevel()).isEqualTo(ResourceLeakDetector.Level.SIMPLE);
  }
}
