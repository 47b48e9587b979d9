package dev.phrony.worker.ops;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.SerializableString;
import com.fasterxml.jackson.core.io.CharacterEscapes;
import com.fasterxml.jackson.core.io.SerializedString;
import dev.phrony.worker.Printable;
import net.logstash.logback.decorate.JsonFactoryDecorator;

/**
 * JSON log lines escape what {@link Printable} escapes: JSON only requires it for C0 controls, but
 * a C1 CSI (U+009B) or a right-to-left override (U+202E) in a call id would still reach a terminal
 * raw. Named in {@code conf/logback.xml} as the encoder's {@code jsonFactoryDecorator}.
 */
public final class PrintableJsonEscapes implements JsonFactoryDecorator {

  @Override
  public JsonFactory decorate(JsonFactory factory) {
    return factory.setCharacterEscapes(new Escapes());
  }

  private static final class Escapes extends CharacterEscapes {
    private final int[] ascii;

    Escapes() {
      ascii = standardAsciiEscapesForJSON();
      ascii[0x7f] = ESCAPE_STANDARD;
    }

    @Override
    public int[] getEscapeCodesForAscii() {
      return ascii;
    }

    @Override
    public SerializableString getEscapeSequence(int ch) {
      if (!Printable.unsafe(ch)) {
        return null;
      }
      StringBuilder b = new StringBuilder(6);
      Printable.appendEscaped(b, (char) ch);
      return new SerializedString(b.toString());
    }
  }
}
