package dev.phrony.worker.outbox;

import dev.phrony.worker.call.CallOutcome;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Locale;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.zip.CRC32C;

/**
 * The outbox log's format, version 1: how its files are named and what is in them. The reader
 * ({@link LogReader}), the writer ({@link LogWriter}) and the compactor ({@link LogCompactor}) all
 * go through here. All integers big-endian.
 *
 * <pre>
 * dir    = (seq ".batch" | seq ".snap")*      -- seq: 20 ASCII digits; being written: + ".tmp"
 * file   = header record*
 * header = magic "PHOX" (4) | version u16 | kind u8 (1 batch, 2 snapshot) | 0 u8 | seq i64
 *          | createdAt epoch-ms i64 | crc32c of the previous 24 bytes (4)          -- 28 bytes
 * record = marker "RCD1" (4) | length u32 | crc32c of length and body (4) | body
 * body   = type u8 | fields (strings: i32 length, -1 = null, then UTF-8; bytes: i32 length then
 *          bytes; instants: i64 epoch second, i32 nano, Long.MIN_VALUE = null)
 * </pre>
 *
 * <p>The record marker lets a reader find the next record after a damaged one. A batch file may end
 * in zeros (room the writer preallocated and has not used yet).
 */
final class LogFileFormat {
  static final String BATCH_EXT = ".batch";
  static final String SNAP_EXT = ".snap";

  /** A file being published: only ever visible under its final name once forced. */
  static final String TMP_EXT = ".tmp";

  private static final Pattern NAME = Pattern.compile("(\\d{20})(\\.batch|\\.snap)");

  static final int MAGIC = 0x50484F58; // "PHOX"
  static final int VERSION = 1;
  static final int KIND_BATCH = 1;
  static final int KIND_SNAPSHOT = 2;
  static final int HEADER_BYTES = 28;
  static final int MARKER = 0x52434431; // "RCD1"
  static final int FRAME_BYTES = 12;

  /** Larger bodies are taken as damage: results are capped at a few MiB by the dispatcher. */
  static final int MAX_BODY = 64 << 20;

  private static final int T_RESULT = 1;
  private static final int T_RELEASE = 2;
  private static final int T_ORPHAN = 3;
  private static final int T_INTENT = 4;
  private static final int T_INTERRUPTED = 5;
  private static final int T_DROP_INTENT = 6;
  private static final int O_PAYLOAD = 0;
  private static final int O_ERROR = 1;

  private LogFileFormat() {}

  /** The name of log file {@code seq}: ASCII digits whatever the default locale's. */
  static String fileName(long seq, boolean snapshot) {
    return String.format(Locale.ROOT, "%020d", seq) + (snapshot ? SNAP_EXT : BATCH_EXT);
  }

  /** The log file {@code p} is by its name (its size not known yet), if it is named as one. */
  static Optional<LogFile> named(Path p) {
    Matcher m = NAME.matcher(p.getFileName().toString());
    return m.matches()
        ? Optional.of(new LogFile(Long.parseLong(m.group(1)), p, -1, m.group(2).equals(SNAP_EXT)))
        : Optional.empty();
  }

  /** A parsed file header. */
  record Header(int version, int kind, long seq, Instant createdAt) {}

  static ByteBuffer header(int kind, long seq, Instant createdAt) {
    ByteBuffer b = ByteBuffer.allocate(HEADER_BYTES).order(ByteOrder.BIG_ENDIAN);
    b.putInt(MAGIC)
        .putShort((short) VERSION)
        .put((byte) kind)
        .put((byte) 0)
        .putLong(seq)
        .putLong(createdAt.toEpochMilli());
    b.putInt(crc(b.array(), 0, 24));
    return b.flip();
  }

  /** When the file in {@code bytes} was written, if its header is intact. */
  static Optional<Instant> createdAt(byte[] bytes) {
    try {
      return Optional.of(readHeader(ByteBuffer.wrap(bytes)).createdAt());
    } catch (IllegalArgumentException e) {
      return Optional.empty();
    }
  }

  /**
   * Parses a header.
   *
   * @throws IllegalArgumentException describing what is wrong
   */
  static Header readHeader(ByteBuffer file) {
    if (file.remaining() < HEADER_BYTES) {
      throw new IllegalArgumentException(
          "file is shorter (" + file.remaining() + " bytes) than its header");
    }
    int start = file.position();
    int magic = file.getInt(start);
    if (magic != MAGIC) {
      throw new IllegalArgumentException(
          String.format(Locale.ROOT, "not an outbox file (magic %08x)", magic));
    }
    int stored = file.getInt(start + 24);
    byte[] head = new byte[24];
    file.get(start, head);
    if (crc(head, 0, 24) != stored) {
      throw new IllegalArgumentException("header checksum mismatch");
    }
    int version = file.getShort(start + 4) & 0xffff;
    if (version != VERSION) {
      throw new IllegalArgumentException(
          "format version "
              + version
              + " is not supported (this worker reads version "
              + VERSION
              + ")");
    }
    return new Header(
        version,
        file.get(start + 6),
        file.getLong(start + 8),
        Instant.ofEpochMilli(file.getLong(start + 16)));
  }

  static int crc(byte[] bytes, int off, int len) {
    CRC32C c = new CRC32C();
    c.update(bytes, off, len);
    return (int) c.getValue();
  }

  /** Appends one framed record to {@code out}. */
  static void writeRecord(Buf out, LogRecord record) {
    int frame = out.size();
    out.putInt(MARKER).putInt(0).putInt(0);
    writeBody(out, record);
    int len = out.size() - frame - FRAME_BYTES;
    out.setInt(frame + 4, len);
    out.setInt(frame + 8, frameCrc(out.array(), frame, len));
  }

  /** CRC of a frame as written by {@link #writeRecord}: length bytes then body. */
  static int frameCrc(byte[] a, int frame, int len) {
    CRC32C c = new CRC32C();
    c.update(a, frame + 4, 4);
    c.update(a, frame + FRAME_BYTES, len);
    return (int) c.getValue();
  }

  private static void writeBody(Buf out, LogRecord record) {
    switch (record) {
      case LogRecord.Result r -> {
        HeldResult h = r.result();
        out.put(T_RESULT)
            .str(h.callId())
            .str(h.sessionId())
            .str(h.toolKey())
            .str(h.sideEffectClass())
            .instant(h.completedAt());
        switch (h.outcome()) {
          case CallOutcome.Payload p -> out.put(O_PAYLOAD).bytes(p.bytes());
          case CallOutcome.Error e -> out.put(O_ERROR).str(e.code()).str(e.message());
        }
        out.instant(r.orphanedAt());
      }
      case LogRecord.Release r -> out.put(T_RELEASE).str(r.callId());
      case LogRecord.Orphan o -> out.put(T_ORPHAN).str(o.callId()).instant(o.at());
      case LogRecord.Intent i -> {
        IntentRecord in = i.intent();
        out.put(T_INTENT)
            .str(in.callId())
            .str(in.sessionId())
            .str(in.toolKey())
            .str(in.sideEffectClass())
            .instant(in.startedAt())
            .instant(i.interruptedAt());
      }
      case LogRecord.Interrupted i -> out.put(T_INTERRUPTED).str(i.callId()).instant(i.at());
      case LogRecord.DropIntent d -> out.put(T_DROP_INTENT).str(d.callId());
    }
  }

  /**
   * Decodes a record body.
   *
   * @throws IllegalArgumentException if it is not a valid body
   */
  static LogRecord readBody(ByteBuffer body) {
    try {
      int type = body.get();
      LogRecord r =
          switch (type) {
            case T_RESULT -> {
              String callId = required(str(body), "call id");
              String session = str(body);
              String tool = str(body);
              String sec = str(body);
              Instant completed = instant(body);
              int kind = body.get();
              CallOutcome outcome =
                  switch (kind) {
                    case O_PAYLOAD -> new CallOutcome.Payload(bytes(body));
                    case O_ERROR ->
                        new CallOutcome.Error(required(str(body), "error code"), str(body));
                    default -> throw new IllegalArgumentException("unknown outcome kind " + kind);
                  };
              yield new LogRecord.Result(
                  new HeldResult(callId, session, tool, sec, completed, outcome), instant(body));
            }
            case T_RELEASE -> new LogRecord.Release(required(str(body), "call id"));
            case T_ORPHAN -> new LogRecord.Orphan(required(str(body), "call id"), instant(body));
            case T_INTENT -> {
              String callId = required(str(body), "call id");
              String session = str(body);
              String tool = str(body);
              String sec = str(body);
              Instant started = required(instant(body), "start time");
              yield new LogRecord.Intent(
                  new IntentRecord(callId, session, tool, sec, started), instant(body));
            }
            case T_INTERRUPTED ->
                new LogRecord.Interrupted(required(str(body), "call id"), instant(body));
            case T_DROP_INTENT -> new LogRecord.DropIntent(required(str(body), "call id"));
            default -> throw new IllegalArgumentException("unknown record type " + type);
          };
      if (body.hasRemaining()) {
        throw new IllegalArgumentException(body.remaining() + " unexpected bytes after the record");
      }
      return r;
    } catch (BufferUnderflowException e) {
      throw new IllegalArgumentException("record body ends early");
    }
  }

  /**
   * What a damaged record still says about its call: the type byte and the strings after it, as far
   * as they parse. A flipped byte inside the call id itself cannot be told apart.
   *
   * @param mustNotRerun the record may stand for a run whose effect a second run repeats: an intent
   *     or result that is not {@code read_only} or {@code idempotent_write} as far as can be read
   *     (release and drop records stand for no run of their own)
   */
  record Salvaged(
      boolean mustNotRerun,
      String callId,
      String sessionId,
      String toolKey,
      String sideEffectClass) {}

  /** The call id (and what follows, as far as it parses) of the body at {@code body}. */
  static Optional<Salvaged> salvage(byte[] a, int body, int available) {
    if (body < 0 || available < 6 || body + available > a.length) {
      return Optional.empty();
    }
    ByteBuffer b = ByteBuffer.wrap(a, body, available).slice();
    int type = b.get();
    String id;
    try {
      id = str(b);
    } catch (RuntimeException e) {
      return Optional.empty();
    }
    if (id == null
        || id.isEmpty()
        || id.length() > 1024
        || id.chars().anyMatch(c -> c < 0x20 || c == 0x7f)) {
      return Optional.empty();
    }
    String[] more = new String[3];
    if (type == T_RESULT || type == T_INTENT) {
      try {
        for (int i = 0; i < more.length; i++) {
          more[i] = str(b);
        }
      } catch (RuntimeException e) {
        // keep what parsed
      }
    }
    boolean safeToRerun =
        type == T_RELEASE
            || type == T_DROP_INTENT
            || "read_only".equals(more[2])
            || "idempotent_write".equals(more[2]);
    return Optional.of(new Salvaged(!safeToRerun, id, more[0], more[1], more[2]));
  }

  private static <T> T required(T value, String what) {
    if (value == null) {
      throw new IllegalArgumentException("record has no " + what);
    }
    return value;
  }

  private static String str(ByteBuffer b) {
    int len = b.getInt();
    if (len == -1) {
      return null;
    }
    if (len < 0 || len > b.remaining()) {
      throw new IllegalArgumentException("bad string length " + len);
    }
    ByteBuffer slice = b.slice(b.position(), len);
    b.position(b.position() + len);
    try {
      return StandardCharsets.UTF_8
          .newDecoder()
          .onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT)
          .decode(slice)
          .toString();
    } catch (CharacterCodingException e) {
      throw new IllegalArgumentException("string is not UTF-8");
    }
  }

  private static byte[] bytes(ByteBuffer b) {
    int len = b.getInt();
    if (len < 0 || len > b.remaining()) {
      throw new IllegalArgumentException("bad byte-array length " + len);
    }
    byte[] out = new byte[len];
    b.get(out);
    return out;
  }

  private static Instant instant(ByteBuffer b) {
    long sec = b.getLong();
    int nano = b.getInt();
    if (sec == Long.MIN_VALUE) {
      return null;
    }
    if (nano < 0 || nano > 999_999_999) {
      throw new IllegalArgumentException("bad instant");
    }
    return Instant.ofEpochSecond(sec, nano);
  }

  /** A rough encoded size, for compaction decisions. */
  static long estimate(LogRecord r) {
    return switch (r) {
      case LogRecord.Result res ->
          128 + res.result().callId().length() + res.result().outcome().size();
      case LogRecord.Intent i -> 96 + i.callId().length();
      default -> 32 + r.callId().length();
    };
  }

  /** A growable big-endian byte buffer. */
  static final class Buf {
    private byte[] a;
    private int n;

    Buf(int capacity) {
      a = new byte[Math.max(64, capacity)];
    }

    private void ensure(int more) {
      if (n + more > a.length) {
        a = java.util.Arrays.copyOf(a, Math.max(a.length * 2, n + more));
      }
    }

    Buf put(int b) {
      ensure(1);
      a[n++] = (byte) b;
      return this;
    }

    Buf putInt(int v) {
      ensure(4);
      setInt(n, v);
      n += 4;
      return this;
    }

    Buf putLong(long v) {
      putInt((int) (v >>> 32));
      return putInt((int) v);
    }

    void setInt(int at, int v) {
      a[at] = (byte) (v >>> 24);
      a[at + 1] = (byte) (v >>> 16);
      a[at + 2] = (byte) (v >>> 8);
      a[at + 3] = (byte) v;
    }

    Buf raw(byte[] b) {
      ensure(b.length);
      System.arraycopy(b, 0, a, n, b.length);
      n += b.length;
      return this;
    }

    Buf bytes(byte[] b) {
      return putInt(b.length).raw(b);
    }

    Buf str(String s) {
      return s == null ? putInt(-1) : bytes(s.getBytes(StandardCharsets.UTF_8));
    }

    Buf instant(Instant t) {
      return t == null
          ? putLong(Long.MIN_VALUE).putInt(0)
          : putLong(t.getEpochSecond()).putInt(t.getNano());
    }

    int size() {
      return n;
    }

    byte[] array() {
      return a;
    }

    ByteBuffer asByteBuffer() {
      return ByteBuffer.wrap(a, 0, n);
    }

    void clear() {
      n = 0;
    }
  }
}
