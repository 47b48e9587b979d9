package dev.phrony.worker.state;

import dev.phrony.worker.Printable;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The worker's state directory: owner-only, held by exactly one process through an exclusive OS
 * file lock on its {@code lock} file (which names the holder's pid), kept until {@link #close}.
 *
 * <p>Layout: {@code lock}, {@code worker-id}, {@code outbox/} (the durable outbox's files) and
 * {@code corrupt/} (damaged files moved aside). Everything created inside is owner-only.
 *
 * <p>POSIX record locks belong to the process, and closing <em>any</em> descriptor of the lock file
 * drops them. So this class remembers which dirs this JVM holds and never opens their lock file a
 * second time; nothing else in the process may open it either.
 */
public final class StateDir implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(StateDir.class);

  public static final String LOCK_FILE = "lock";
  public static final String WORKER_ID_FILE = "worker-id";

  /** The plugin generation registered last (its worker id is {@code <worker-id>.g<n>} past 1). */
  public static final String GENERATION_FILE = "plugin-generation";

  /** Says what the dir is, so the worker knows its own dir from one it must not take over. */
  public static final String MARKER_FILE = "README.phrony-worker";

  static final Set<PosixFilePermission> DIR_PERMS = PosixFilePermissions.fromString("rwx------");
  static final Set<PosixFilePermission> FILE_PERMS = PosixFilePermissions.fromString("rw-------");

  /** One printable token: all a one-line file needs; the runtime only requires non-empty. */
  private static final Pattern WORKER_ID = Pattern.compile("[^\\s\\p{Cntrl}]{1,255}");

  /**
   * Dirs locked by this JVM (real paths). Process-wide by nature: the OS lock is per process, and a
   * second channel on the lock file would silently release it when closed.
   */
  private static final ConcurrentHashMap<Path, StateDir> HELD = new ConcurrentHashMap<>();

  private final Path dir;
  private final Path key;
  private final FileChannel lockChannel;
  private final FileLock lock;
  private volatile boolean closed;

  private StateDir(Path dir, Path key, FileChannel lockChannel, FileLock lock) {
    this.dir = dir;
    this.key = key;
    this.lockChannel = lockChannel;
    this.lock = lock;
  }

  /**
   * Creates {@code dir} if needed (rwx------), locks it for this process and writes our pid into
   * its lock file.
   *
   * @throws StateDirLockedException if another process (or this one) holds it
   * @throws IOException if the dir cannot be created or locked
   */
  public static StateDir open(Path dir) throws IOException {
    Path abs = dir.toAbsolutePath().normalize();
    adopt(abs);
    Path key = abs.toRealPath();
    long self = ProcessHandle.current().pid();
    StateDir[] created = new StateDir[1];
    IOException[] failure = new IOException[1];
    HELD.computeIfAbsent(
        key,
        k -> {
          try {
            created[0] = lock(abs, k, self);
            return created[0];
          } catch (IOException e) {
            failure[0] = e;
            return null;
          }
        });
    if (failure[0] != null) {
      throw failure[0];
    }
    if (created[0] == null) {
      throw new StateDirLockedException(
          abs,
          OptionalLong.of(self),
          "state dir "
              + abs
              + " is already open in this process (pid "
              + self
              + "); open it once and share it");
    }
    log.info("state dir {} locked by pid {}", abs, self);
    return created[0];
  }

  private static StateDir lock(Path abs, Path key, long self) throws IOException {
    Path lockFile = abs.resolve(LOCK_FILE);
    FileChannel ch =
        FileChannel.open(
            lockFile,
            openOptions(
                StandardOpenOption.CREATE, StandardOpenOption.READ, StandardOpenOption.WRITE),
            fileAttributes(lockFile));
    FileLock lock;
    try {
      lock = ch.tryLock();
    } catch (OverlappingFileLockException e) {
      // Locked through another channel of this JVM that is not ours; closing ch would release
      // that lock, so keep ch open (a small leak on an error path beats breaking the holder).
      throw new StateDirLockedException(
          abs,
          OptionalLong.of(self),
          "state dir " + abs + " is already locked in this process (pid " + self + ")");
    } catch (IOException | RuntimeException e) {
      ch.close();
      throw e;
    }
    if (lock == null) {
      OptionalLong pid = readPid(ch);
      ch.close(); // the holder is another process: our close does not touch its lock
      throw new StateDirLockedException(
          abs,
          pid,
          "state dir "
              + abs
              + " is locked by another "
              + "phrony-worker (pid "
              + (pid.isPresent() ? pid.getAsLong() : "unknown")
              + "); stop that worker or use another --state-dir");
    }
    try {
      ch.truncate(0);
      ch.write(ByteBuffer.wrap((self + "\n").getBytes(StandardCharsets.US_ASCII)), 0);
      ch.force(true);
      restrictPermissions(lockFile, FILE_PERMS);
    } catch (IOException | RuntimeException e) {
      ch.close();
      throw e;
    }
    return new StateDir(abs, key, ch, lock);
  }

  private static OptionalLong readPid(FileChannel ch) throws IOException {
    ByteBuffer buf = ByteBuffer.allocate(64);
    ch.read(buf, 0);
    return parsePid(new String(buf.array(), 0, buf.position(), StandardCharsets.US_ASCII));
  }

  private static OptionalLong parsePid(String text) {
    try {
      return OptionalLong.of(Long.parseLong(text.strip()));
    } catch (NumberFormatException e) {
      return OptionalLong.empty();
    }
  }

  /**
   * The pid of the live process holding {@code dir}, without taking or disturbing the lock: this
   * JVM's pid if it holds it, else the pid in the lock file if that process is alive.
   */
  public static OptionalLong holderPid(Path dir) {
    Path abs = dir.toAbsolutePath().normalize();
    try {
      Path key = abs.toRealPath();
      if (HELD.containsKey(key)) {
        return OptionalLong.of(ProcessHandle.current().pid());
      }
      OptionalLong pid =
          parsePid(Files.readString(abs.resolve(LOCK_FILE), StandardCharsets.US_ASCII));
      if (pid.isPresent()
          && ProcessHandle.of(pid.getAsLong()).map(ProcessHandle::isAlive).orElse(false)) {
        return pid;
      }
      return OptionalLong.empty();
    } catch (IOException | RuntimeException e) {
      return OptionalLong.empty();
    }
  }

  public Path path() {
    return dir;
  }

  /** {@code dir/name}, created owner-only if missing. */
  public Path subdir(String name) throws IOException {
    Path p = dir.resolve(name);
    ensureOwnerOnlyDir(p);
    return p;
  }

  /**
   * The worker id kept in {@code worker-id}; on first use (or if the file is unreadable) one is
   * taken from {@code generator}, written atomically, and kept for every later start.
   */
  public String workerId(Supplier<String> generator) {
    checkOpen();
    Path file = dir.resolve(WORKER_ID_FILE);
    try {
      String stored = Files.readString(file, StandardCharsets.UTF_8).strip();
      if (WORKER_ID.matcher(stored).matches()) {
        return stored;
      }
      log.warn("ignoring unusable worker id in {} ('{}'); generating a new one", file, stored);
    } catch (NoSuchFileException e) {
      // first start
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read " + file, e);
    }
    String id = generator.get();
    if (id == null || !WORKER_ID.matcher(id).matches()) {
      throw new IllegalArgumentException("generated worker id '" + id + "' is not usable");
    }
    try {
      writeAtomically(file, (id + "\n").getBytes(StandardCharsets.UTF_8));
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write " + file, e);
    }
    log.info("generated worker id {} (kept in {})", id, file);
    return id;
  }

  /**
   * The plugin generation the worker registered last, so that a restart registers under that
   * generation's id again (replacing at once what the runtime may still hold of it) and advertises
   * its held results as before; 1 when none was kept.
   */
  public int generation() {
    checkOpen();
    Path file = dir.resolve(GENERATION_FILE);
    try {
      int n = Integer.parseInt(Files.readString(file, StandardCharsets.UTF_8).strip());
      return Math.max(1, n);
    } catch (NoSuchFileException e) {
      return 1;
    } catch (NumberFormatException e) {
      log.warn("ignoring unusable plugin generation in {}; starting at 1", file);
      return 1;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read " + file, e);
    }
  }

  /** Keeps {@code n} as the generation registered last (one at a time: it replaces the last). */
  public void generation(int n) {
    checkOpen();
    try {
      writeAtomically(dir.resolve(GENERATION_FILE), (n + "\n").getBytes(StandardCharsets.UTF_8));
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write " + dir.resolve(GENERATION_FILE), e);
    }
  }

  /** Releases the lock. The dir and its files stay. */
  @Override
  public void close() throws IOException {
    if (closed) {
      return;
    }
    closed = true;
    try {
      lockChannel.truncate(0); // a crash leaves the pid, a clean stop does not
      lock.release();
    } finally {
      lockChannel.close();
      HELD.remove(key, this);
    }
  }

  private void checkOpen() {
    if (closed) {
      throw new IllegalStateException("state dir " + dir + " is closed");
    }
  }

  // ---- taking a directory as the state dir ----

  /**
   * Makes {@code abs} usable as a state dir without taking over anything that is not ours: a
   * missing one is created rwx------ (its parents as the umask says); an existing state dir is kept
   * (and made owner-only again, as the worker made it); an empty directory of this user is adopted
   * with its mode left as it is; anything else is refused untouched. A symbolic link is followed to
   * decide, and its target is treated the same way.
   */
  private static void adopt(Path abs) throws IOException {
    if (!Files.exists(abs, LinkOption.NOFOLLOW_LINKS)) {
      ensureOwnerOnlyDir(abs);
      markAsStateDir(abs);
      return;
    }
    if (!Files.isDirectory(abs)) {
      throw new StateDirRefusedException(
          "state dir "
              + abs
              + " exists and is not a directory:"
              + " point it at a new or empty directory");
    }
    Path real = abs.toRealPath();
    List<String> entries;
    try (Stream<Path> list = Files.list(real)) {
      entries = list.map(p -> p.getFileName().toString()).sorted().toList();
    }
    boolean ours = !entries.isEmpty() && entries.stream().allMatch(StateDir::isOwnEntry);
    OptionalLong owner = uid(real);
    OptionalLong self = currentUid();
    boolean mine = owner.isEmpty() || self.isEmpty() || owner.getAsLong() == self.getAsLong();
    if (!mine) {
      throw new StateDirRefusedException(
          "state dir "
              + abs
              + (real.equals(abs) ? "" : " (" + real + ")")
              + " belongs to uid "
              + owner.getAsLong()
              + ", not this user (uid "
              + self.getAsLong()
              + "): run the worker as its owner, or point the state dir at a new"
              + " directory, e.g. "
              + abs.resolve("phrony-worker"));
    }
    if (ours) {
      restrictPermissions(real, DIR_PERMS); // a dir the worker made; an old one may be open
      markAsStateDir(real);
      return;
    }
    if (!entries.isEmpty()) {
      throw new StateDirRefusedException(
          "state dir "
              + abs
              + (real.equals(abs) ? "" : " (" + real + ")")
              + " is not a phrony-worker state dir: it holds "
              + describe(entries)
              + ". Nothing was changed; point the state dir at a new or empty"
              + " directory of its own, e.g. "
              + abs.resolve("phrony-worker"));
    }
    // An empty dir of this user: used as it is. Its mode is the operator's; the files the
    // worker writes inside are owner-only whatever it is.
    Set<PosixFilePermission> mode = permissions(real);
    if (mode != null && !mode.equals(DIR_PERMS)) {
      log.warn(
          "state dir {} is {}, not rwx------; it was not created by the worker, so its mode"
              + " is left as it is (the files in it are owner-only; chmod 700 it to hide their"
              + " names)",
          abs,
          PosixFilePermissions.toString(mode));
    }
    markAsStateDir(real);
  }

  /** Names the worker writes in its state dir (and an unpublished {@code .tmp} of one). */
  private static boolean isOwnEntry(String name) {
    String n = name.endsWith(".tmp") ? name.substring(0, name.length() - 4) : name;
    return n.equals(LOCK_FILE)
        || n.equals(WORKER_ID_FILE)
        || n.equals(GENERATION_FILE)
        || n.equals(MARKER_FILE)
        || n.equals("outbox")
        || n.equals("corrupt");
  }

  private static String describe(List<String> entries) {
    List<String> shown = entries.stream().limit(5).map(e -> "'" + Printable.of(e) + "'").toList();
    return entries.size()
        + (entries.size() == 1 ? " entry (" : " entries (")
        + String.join(", ", shown)
        + (entries.size() > shown.size() ? ", ..." : "")
        + ")";
  }

  private static void markAsStateDir(Path dir) throws IOException {
    Path marker = dir.resolve(MARKER_FILE);
    if (!Files.exists(marker, LinkOption.NOFOLLOW_LINKS)) {
      writeAtomically(
          marker,
          ("phrony-worker state dir: the lock, the worker id and the durable"
                  + " outbox. Keep it; do not share it between workers.\n")
              .getBytes(StandardCharsets.UTF_8));
    }
  }

  private static OptionalLong uid(Path p) {
    try {
      return OptionalLong.of(((Number) Files.getAttribute(p, "unix:uid")).longValue());
    } catch (IOException | UnsupportedOperationException | IllegalArgumentException e) {
      return OptionalLong.empty(); // not a POSIX file system: no owner to compare
    }
  }

  private static OptionalLong currentUid() {
    try {
      return OptionalLong.of(new com.sun.security.auth.module.UnixSystem().getUid());
    } catch (LinkageError | RuntimeException e) {
      return OptionalLong.empty();
    }
  }

  private static Set<PosixFilePermission> permissions(Path p) throws IOException {
    PosixFileAttributeView view = Files.getFileAttributeView(p, PosixFileAttributeView.class);
    return view == null ? null : view.readAttributes().permissions();
  }

  // ---- owner-only file helpers (shared with the outbox) ----

  /**
   * Creates {@code dir} and missing parents; the dir itself is (made) rwx------. For the state
   * dir's own folders only: a symbolic link is refused, never followed.
   */
  public static void ensureOwnerOnlyDir(Path dir) throws IOException {
    if (Files.isSymbolicLink(dir)) {
      throw new IOException(
          dir
              + " is a symbolic link: the state dir's folders must be real"
              + " directories (remove the link)");
    }
    if (Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) {
      restrictPermissions(dir, DIR_PERMS);
      return;
    }
    if (Files.exists(dir)) {
      throw new IOException(dir + " exists and is not a directory");
    }
    Path parent = dir.toAbsolutePath().getParent();
    if (parent != null) {
      Files.createDirectories(parent);
    }
    try {
      Files.createDirectory(dir, dirAttributes(dir));
    } catch (FileAlreadyExistsException e) {
      // raced with another creator; fall through to the permission check
    }
    restrictPermissions(dir, DIR_PERMS);
  }

  /** Attributes for a new owner-only file, where the file system supports POSIX permissions. */
  public static FileAttribute<?>[] fileAttributes(Path file) {
    return isPosix(file)
        ? new FileAttribute<?>[] {PosixFilePermissions.asFileAttribute(FILE_PERMS)}
        : new FileAttribute<?>[0];
  }

  private static FileAttribute<?>[] dirAttributes(Path dir) {
    return isPosix(dir)
        ? new FileAttribute<?>[] {PosixFilePermissions.asFileAttribute(DIR_PERMS)}
        : new FileAttribute<?>[0];
  }

  private static boolean isPosix(Path p) {
    return p.getFileSystem().supportedFileAttributeViews().contains("posix");
  }

  private static void restrictPermissions(Path p, Set<PosixFilePermission> perms)
      throws IOException {
    PosixFileAttributeView view = Files.getFileAttributeView(p, PosixFileAttributeView.class);
    if (view != null && !view.readAttributes().permissions().equals(perms)) {
      view.setPermissions(perms); // the umask may have widened a new one; an old one may be open
    }
  }

  private static Set<OpenOption> openOptions(OpenOption... options) {
    return Set.of(options);
  }

  /**
   * Writes {@code bytes} to {@code file} so that a crash leaves the old or the new content: a
   * temporary owner-only file, forced, renamed over, then the directory forced.
   */
  public static void writeAtomically(Path file, byte[] bytes) throws IOException {
    Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
    Files.deleteIfExists(tmp);
    try (FileChannel ch =
        FileChannel.open(
            tmp,
            openOptions(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE),
            fileAttributes(tmp))) {
      ByteBuffer buf = ByteBuffer.wrap(bytes);
      while (buf.hasRemaining()) {
        ch.write(buf);
      }
      ch.force(true);
    }
    Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    forceDirectory(file.toAbsolutePath().getParent());
  }

  /**
   * Forces a directory's entries (new and renamed names) to the device; a no-op where unsupported.
   */
  public static void forceDirectory(Path dir) throws IOException {
    try (FileChannel ch = FileChannel.open(dir, StandardOpenOption.READ)) {
      ch.force(true);
    } catch (UnsupportedOperationException e) {
      // not supported on this platform (e.g. Windows); renames are durable there by other means
    }
  }
}
