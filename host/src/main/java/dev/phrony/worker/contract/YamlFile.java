package dev.phrony.worker.contract;

import dev.phrony.worker.SyntaxException;
import dev.phrony.worker.contract.YamlTree.Mapping;
import dev.phrony.worker.contract.YamlTree.Node;
import dev.phrony.worker.contract.YamlTree.Scalar;
import dev.phrony.worker.contract.YamlTree.Sequence;
import java.io.IOException;
import java.io.StringReader;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * One YAML file of a bundle, read as the runtime reads it: its first document only (Go's {@code
 * yaml.Unmarshal} decodes the first and ignores the rest). Field readers fail with a {@link
 * DocumentException} naming the line, the field and the fix.
 *
 * @param file the file
 * @param root its first document
 * @param documents how many documents it has (later ones are not read)
 */
record YamlFile(Path file, Mapping root, int documents) {

  /** A field that cannot be read: where it is, what is wrong, and the fix. */
  static final class DocumentException extends Exception {
    private static final long serialVersionUID = 1L;
    private final int line;
    private final String what;
    private final String fix;

    DocumentException(int line, String what, String fix) {
      this(line, what, fix, null);
    }

    DocumentException(int line, String what, String fix, Throwable cause) {
      super(what + " at line " + line + ": " + fix, cause);
      this.line = line;
      this.what = what;
      this.fix = fix;
    }

    int line() {
      return line;
    }

    String what() {
      return what;
    }

    String fix() {
      return fix;
    }

    Problem problem(Path file) {
      return Problem.error(file, line, "", what, fix);
    }

    ManifestException manifestException(Path file) {
      String shown = Contracts.shown(file);
      String message;
      if (fix.isEmpty()) {
        message = "manifest " + shown + ": " + what; // a syntax error says where itself
      } else if (line > 0) {
        message = "manifest " + shown + ": " + what + " at line " + line + ": " + fix;
      } else {
        message = "manifest " + shown + " " + what + ": " + fix;
      }
      return new ManifestException(file, line, message, this);
    }
  }

  /**
   * The first document of {@code file}.
   *
   * @throws DocumentException when the file is missing, unreadable, not YAML or not a mapping
   */
  static YamlFile read(Path file) throws DocumentException {
    if (Files.isDirectory(file)) {
      throw new DocumentException(0, "is a directory", "pass the manifest file itself", null);
    }
    String text;
    try {
      text = Files.readString(file, StandardCharsets.UTF_8);
    } catch (NoSuchFileException e) {
      throw new DocumentException(0, "does not exist", "check the path given with --manifest", e);
    } catch (CharacterCodingException e) {
      throw new DocumentException(0, "is not UTF-8 text", "save it as UTF-8", e);
    } catch (IOException e) {
      throw new DocumentException(
          0, "cannot be read (" + e + ")", "check that it is a file readable by this user", e);
    }
    List<Node> docs;
    try {
      docs = YamlTree.read(new StringReader(text));
    } catch (SyntaxException e) {
      throw new DocumentException(
          e.line(),
          "YAML syntax error at line " + e.line() + ", column " + e.column() + ": " + e.problem(),
          "",
          e);
    } catch (IOException e) {
      throw new IllegalStateException("reading a string cannot fail", e);
    }
    if (docs.isEmpty() || absent(docs.getFirst())) {
      throw new DocumentException(
          1, "is empty", "write a document with apiVersion, kind, metadata and spec", null);
    }
    if (!(docs.getFirst() instanceof Mapping m)) {
      throw new DocumentException(
          docs.getFirst().line(),
          "the first document is not a mapping",
          "write a mapping of apiVersion, kind, metadata and spec",
          null);
    }
    return new YamlFile(file, m, docs.size());
  }

  static boolean absent(Node node) {
    return node == null || node instanceof Scalar s && s.text() == null;
  }

  /** A scalar's text without surrounding blanks; empty when absent or blank. */
  static Optional<String> text(Mapping parent, String key, String path) throws DocumentException {
    Node node = parent.get(key);
    if (node == null) {
      return Optional.empty();
    }
    if (node instanceof Scalar s) {
      return Optional.ofNullable(s.text()).map(String::strip).filter(t -> !t.isEmpty());
    }
    throw new DocumentException(node.line(), path + " is not a single value", "write a string");
  }

  /** A scalar's text, empty when absent or not a scalar (for checks that report, not fail). */
  static Optional<String> text0(Mapping parent, String key) {
    return parent.get(key) instanceof Scalar s
        ? Optional.ofNullable(s.text()).map(String::strip).filter(t -> !t.isEmpty())
        : Optional.empty();
  }

  /** The mapping at {@code parent.key}, empty when absent. */
  static Optional<Mapping> mapping(Mapping parent, String key, String path)
      throws DocumentException {
    Node node = parent.get(key);
    if (absent(node)) {
      return Optional.empty();
    }
    if (node instanceof Mapping m) {
      return Optional.of(m);
    }
    throw new DocumentException(
        node.line(), path + " is not a mapping", "write it as a mapping, or leave it out", null);
  }

  /** The items of {@code parent.key}, none when absent. */
  static List<Node> items(Mapping parent, String key, String path, String fix)
      throws DocumentException {
    Node node = parent.get(key);
    if (absent(node)) {
      return List.of();
    }
    if (node instanceof Sequence s) {
      return s.items();
    }
    throw new DocumentException(node.line(), path + " is not a list", fix, null);
  }

  /** The line of {@code parent.key}, or the parent's when absent. */
  static int line(Mapping parent, String key) {
    Node n = parent.get(key);
    return n == null ? parent.line() : n.line();
  }

  /** The first document's {@code kind}. */
  Optional<String> kind() throws DocumentException {
    return text(root, "kind", "kind");
  }
}
