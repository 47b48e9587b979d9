package dev.phrony.worker.call;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.exc.StreamConstraintsException;
import com.fasterxml.jackson.core.util.JsonRecyclerPools;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.exc.MismatchedInputException;
import com.fasterxml.jackson.databind.json.JsonMapper;
import dev.phrony.worker.api.ToolException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;

/** The host's JSON codec for handler arguments and results (records, maps, lists). */
public final class JsonCodec {
  private final ObjectMapper mapper =
      JsonMapper.builder(
              JsonFactory.builder()
                  // Jackson recycles its parser/generator buffers per thread by default; calls run
                  // on
                  // virtual threads that live for one call, so every parse and encode would
                  // allocate
                  // them afresh (~12 KiB per encode). A shared pool reuses them across threads; it
                  // holds
                  // about as many as there are carrier threads, since buffers are only taken while
                  // a
                  // parse or an encode runs.
                  .recyclerPool(JsonRecyclerPools.newConcurrentDequePool())
                  .build())
          // Models add fields a handler does not know; refusing them would fail calls for nothing.
          .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
          .build();

  /** True if {@code bytes} hold exactly one well-formed JSON value. */
  public boolean isJson(byte[] bytes) {
    // Every call checks its args and its result: a parser per check cost ~12% of the host's CPU
    // on a no-op call. The scan below answers for the common case without allocating; whatever
    // it cannot vouch for (an error, non-ASCII, deep or large documents) Jackson decides, so
    // what is accepted is exactly what Jackson accepts.
    return JsonScan.certainlyJson(bytes) || parses(() -> mapper.getFactory().createParser(bytes));
  }

  /**
   * The same for arguments as they arrived. Documents too large for the scan are read in place (a
   * large payload is not copied just to be checked); smaller ones are copied for the scan, which is
   * cheaper than a stream for a few bytes.
   */
  public boolean isJson(ByteBuffer bytes) {
    return bytes.remaining() <= JsonScan.MAX_BYTES
        ? isJson(copy(bytes))
        : parses(() -> mapper.getFactory().createParser(input(bytes)));
  }

  /** The bytes of {@code buffer} as a new array; the buffer's position is left alone. */
  public static byte[] copy(ByteBuffer buffer) {
    byte[] b = new byte[buffer.remaining()];
    buffer.duplicate().get(b);
    return b;
  }

  /** A stream over {@code buffer} that reads it in place (a view; the buffer is not moved). */
  public static InputStream input(ByteBuffer buffer) {
    ByteBuffer view = buffer.duplicate();
    return new InputStream() {
      @Override
      public int read() {
        return view.hasRemaining() ? view.get() & 0xff : -1;
      }

      @Override
      public int read(byte[] b, int off, int len) {
        if (len == 0) {
          return 0;
        }
        if (!view.hasRemaining()) {
          return -1;
        }
        int n = Math.min(len, view.remaining());
        view.get(b, off, n);
        return n;
      }

      @Override
      public int available() {
        return view.remaining();
      }
    };
  }

  /** A parser over the document to check; opening it may fail like reading it. */
  private interface Source {
    JsonParser open() throws IOException;
  }

  /** True if {@code source} holds exactly one JSON value, as Jackson reads it. */
  private static boolean parses(Source source) {
    return problem(source) == null;
  }

  /** Why {@code source} is not exactly one JSON value as Jackson reads it; null if it is. */
  private static String problem(Source source) {
    try (JsonParser p = source.open()) {
      if (p.nextToken() == null) {
        return "empty";
      }
      p.skipChildren();
      return p.nextToken() == null ? null : "more than one JSON value";
    } catch (StreamConstraintsException e) {
      StreamReadConstraints limits = StreamReadConstraints.defaults();
      String m = String.valueOf(e.getOriginalMessage());
      if (m.contains("nesting depth")) {
        return "nesting too deep (limit " + limits.getMaxNestingDepth() + " levels)";
      }
      if (m.contains("Number value length")) {
        return "a number too long (limit " + limits.getMaxNumberLength() + " digits)";
      }
      if (m.contains("String value length")) {
        return "a string too long (limit " + limits.getMaxStringLength() + " characters)";
      }
      if (m.contains("Name length")) {
        return "a field name too long (limit " + limits.getMaxNameLength() + " characters)";
      }
      return "beyond the parser's limits";
    } catch (IOException e) {
      return "not valid JSON";
    }
  }

  /**
   * Null if {@code bytes} hold exactly one JSON value; else why not, in words for the model: {@code
   * not valid JSON}, {@code nesting too deep (limit 1000 levels)}.
   */
  public String jsonProblem(ByteBuffer bytes) {
    if (isJson(bytes)) {
      return null;
    }
    return problem(() -> mapper.getFactory().createParser(input(bytes)));
  }

  /**
   * Decodes arguments into {@code type}.
   *
   * @throws ToolException {@code invalid_args} naming the type and the problem
   */
  public <T> T decodeArgs(ByteBuffer json, Class<T> type) {
    try {
      return mapper.readValue(input(json), type); // read in place, not copied first
    } catch (MismatchedInputException e) {
      // Said in JSON's words, at a JSON pointer: the model never sees Java class names.
      throw new ToolException(
          ToolException.INVALID_ARGS,
          pointer(e)
              + ": expected "
              + (e.getTargetType() == null ? "another value" : jsonType(e.getTargetType())),
          e);
    } catch (JsonMappingException e) {
      throw new ToolException(
          ToolException.INVALID_ARGS,
          pointer(e)
              + ": not a valid value"
              + (e.getCause() == null || e.getCause().getMessage() == null
                  ? ""
                  : " (" + e.getCause().getMessage() + ")"),
          e);
    } catch (StreamConstraintsException e) {
      throw new ToolException(
          ToolException.INVALID_ARGS,
          "arguments cannot be read: "
              + problem(() -> mapper.getFactory().createParser(input(json))),
          e);
    } catch (JsonProcessingException e) {
      throw new ToolException(ToolException.INVALID_ARGS, "arguments are not valid JSON", e);
    } catch (IOException e) {
      throw new ToolException(ToolException.INVALID_ARGS, "unreadable arguments", e);
    }
  }

  /** Where in the arguments {@code e} happened, as a JSON pointer ({@code /} for the root). */
  static String pointer(JsonMappingException e) {
    StringBuilder b = new StringBuilder();
    for (JsonMappingException.Reference r : e.getPath()) {
      b.append('/');
      if (r.getFieldName() != null) {
        b.append(r.getFieldName().replace("~", "~0").replace("/", "~1"));
      } else if (r.getIndex() >= 0) {
        b.append(r.getIndex());
      }
    }
    return b.isEmpty() ? "/" : b.toString();
  }

  /** The JSON type a value of {@code t} is read from. */
  static String jsonType(Class<?> t) {
    if (t == String.class || t == char.class || t == Character.class || t.isEnum()) {
      return "string";
    }
    if (t == boolean.class || t == Boolean.class) {
      return "boolean";
    }
    if (t == int.class
        || t == long.class
        || t == short.class
        || t == byte.class
        || t == Integer.class
        || t == Long.class
        || t == Short.class
        || t == Byte.class
        || t == java.math.BigInteger.class) {
      return "integer";
    }
    if (t.isPrimitive() || Number.class.isAssignableFrom(t)) {
      return "number";
    }
    if (t.isArray() || java.util.Collection.class.isAssignableFrom(t)) {
      return "array";
    }
    return "object";
  }

  /** Encodes a handler's value as JSON. */
  public byte[] encode(Object value) throws JsonProcessingException {
    return mapper.writeValueAsBytes(value);
  }
}
