package dev.phrony.worker.state;

import dev.phrony.worker.UserErrorException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Comparator;
import java.util.List;
import java.util.OptionalLong;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Moves a whole state dir from where an older default put it (inside the build output) to where it
 * belongs: atomically where one file system holds both, else copied and then removed. Refused while
 * a worker holds it.
 */
public final class StateDirMove {
  private static final Logger log = LoggerFactory.getLogger(StateDirMove.class);

  private StateDirMove() {}

  /** Moves the state dir at the old default to {@code to}; nothing is lost or overwritten. */
  public static void move(Path from, Path to) {
    if (Files.exists(to)) {
      log.warn(
          "a state dir at the old default {} is left alone: {} is used now, and already"
              + " exists; move what the old one holds by hand if you still need it",
          from,
          to);
      return;
    }
    OptionalLong holder = StateDir.holderPid(from);
    if (holder.isPresent()) {
      throw new UserErrorException(
          "state dir "
              + from
              + " (the old default, inside the build"
              + " output) is in use by process "
              + holder.getAsLong()
              + ": stop it first, so that its state can move to "
              + to);
    }
    try {
      Files.createDirectories(to.getParent());
      try {
        Files.move(from, to, StandardCopyOption.ATOMIC_MOVE);
      } catch (AtomicMoveNotSupportedException | DirectoryNotEmptyException e) {
        copyTree(from, to); // another file system: copy all, then remove the old
        deleteTree(from);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(
          "could not move the state dir from "
              + from
              + " to "
              + to
              + " (nothing was removed from "
              + from
              + ")",
          e);
    }
    log.warn(
        "moved the state dir from {} to {}: the old default was inside the build output,"
            + " where a clean build would delete the results it holds",
        from,
        to);
  }

  private static void copyTree(Path from, Path to) throws IOException {
    List<Path> all;
    try (Stream<Path> s = Files.walk(from)) {
      all = s.toList();
    }
    for (Path p : all) {
      Path target = to.resolve(from.relativize(p).toString());
      if (Files.isDirectory(p)) {
        Files.createDirectories(target);
      } else {
        Files.copy(p, target, StandardCopyOption.COPY_ATTRIBUTES);
      }
    }
  }

  /** Deletes {@code dir} and everything under it; nothing when it does not exist. */
  public static void deleteTree(Path dir) throws IOException {
    if (!Files.exists(dir)) {
      return;
    }
    List<Path> all;
    try (Stream<Path> s = Files.walk(dir)) {
      all = s.sorted(Comparator.reverseOrder()).toList();
    }
    for (Path p : all) {
      Files.deleteIfExists(p);
    }
  }
}
