package dev.phrony.worker.cli;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.phrony.worker.Count;
import dev.phrony.worker.HostJson;
import dev.phrony.worker.Printable;
import dev.phrony.worker.TextColumns;
import dev.phrony.worker.UserErrorException;
import dev.phrony.worker.call.CallOutcome;
import dev.phrony.worker.config.DurationParser;
import dev.phrony.worker.outbox.Durability;
import dev.phrony.worker.outbox.DurableOutbox;
import dev.phrony.worker.outbox.OutboxEntry;
import dev.phrony.worker.outbox.OutboxView;
import dev.phrony.worker.state.StateDir;
import dev.phrony.worker.state.StateDirLockedException;
import dev.phrony.worker.state.StateDirRefusedException;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;

/**
 * {@code phrony-worker outbox list|show|purge}: what the worker's state dir holds. Thin: reading is
 * {@link OutboxView}'s (no lock, works while the worker runs); purging opens the outbox, which
 * needs the state dir's lock.
 */
@Command(
    name = "outbox",
    mixinStandardHelpOptions = true,
    versionProvider = VersionCommand.Provider.class,
    description = "Shows and cleans results and intents kept in the worker's state dir.",
    subcommands = {
      OutboxCommand.ListCommand.class,
      OutboxCommand.ShowCommand.class,
      OutboxCommand.PurgeCommand.class
    },
    exitCodeOnInvalidInput = 1,
    exitCodeListHeading = "%nExit codes:%n",
    exitCodeList = {
      "0:success",
      "1:usage or user error (bad flag, no state dir, unknown call id,"
          + " worker running during purge, I/O error)"
    })
public final class OutboxCommand implements Runnable {

  private static final ObjectMapper JSON = HostJson.MAPPER;

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  private final InstantSource clock;

  public OutboxCommand() {
    this(InstantSource.system());
  }

  /** With {@code clock} for ages (tests). */
  public OutboxCommand(InstantSource clock) {
    this.clock = clock;
  }

  @Override
  public void run() {
    throw new CommandLine.ParameterException(
        spec.commandLine(), "a subcommand is required: list, show or purge");
  }

  private static final String EXIT_HEADING = "%nExit codes:%n";
  private static final String EXIT_OK = "0:success";

  // ---- list ----

  @Command(
      name = "list",
      mixinStandardHelpOptions = true,
      description = {
        "Lists held, orphaned and interrupted calls, oldest first.",
        "Read-only: works while the worker runs."
      },
      exitCodeOnInvalidInput = 1,
      exitCodeListHeading = EXIT_HEADING,
      exitCodeList = {EXIT_OK, "1:usage error, no state dir, or I/O error"})
  static final class ListCommand implements Callable<Integer> {
    @ParentCommand OutboxCommand parent;
    @CommandLine.Spec CommandLine.Model.CommandSpec spec;
    @Mixin StateDirOption stateDir;
    @Mixin FormatOption format;

    @Override
    public Integer call() throws IOException {
      OutboxView view = read(stateDir.resolveMigrating());
      PrintWriter out = spec.commandLine().getOut();
      Instant now = parent.clock.instant();
      warnProblems(spec, view.problems());
      if (format.json()) {
        ObjectNode root = JSON.createObjectNode();
        root.put("state_dir", view.stateDir().toString());
        view.workerPid()
            .ifPresentOrElse(p -> root.put("worker_pid", p), () -> root.putNull("worker_pid"));
        ArrayNode calls = root.putArray("calls");
        view.entries().forEach(e -> calls.add(summary(e, now)));
        ArrayNode problems = root.putArray("problems");
        view.problems().forEach(problems::add);
        out.println(toJson(root));
      } else if (view.entries().isEmpty()) {
        out.println("no calls kept in " + view.stateDir());
      } else {
        List<String[]> rows = new ArrayList<>();
        rows.add(new String[] {"CALL_ID", "STATE", "TOOL", "SESSION", "AGE", "SIZE"});
        for (OutboxEntry e : view.entries()) {
          rows.add(
              new String[] {
                e.callId(),
                e.state().label(),
                dash(e.toolKey()),
                dash(e.sessionId()),
                age(e.age(now)),
                e.outcome() == null ? "-" : Count.bytes(e.size())
              });
        }
        printTable(out, rows);
      }
      return 0;
    }
  }

  // ---- show ----

  @Command(
      name = "show",
      mixinStandardHelpOptions = true,
      description = {
        "Shows one call with its result payload (pretty-printed if it is JSON).",
        "Read-only: works while the worker runs."
      },
      exitCodeOnInvalidInput = 1,
      exitCodeListHeading = EXIT_HEADING,
      exitCodeList = {EXIT_OK, "1:usage error, no state dir, unknown call id, or I/O error"})
  static final class ShowCommand implements Callable<Integer> {
    @ParentCommand OutboxCommand parent;
    @CommandLine.Spec CommandLine.Model.CommandSpec spec;
    @Mixin StateDirOption stateDir;
    @Mixin FormatOption format;

    @Parameters(paramLabel = "CALL_ID", description = "The call to show.")
    String callId;

    @Override
    public Integer call() throws IOException {
      OutboxView view = read(stateDir.resolveMigrating());
      OutboxEntry e =
          view.find(callId)
              .orElseThrow(
                  () ->
                      new UserErrorException(
                          "no call '"
                              + callId
                              + "' in the outbox of "
                              + view.stateDir()
                              + " (see 'phrony-worker outbox list')"));
      PrintWriter out = spec.commandLine().getOut();
      Instant now = parent.clock.instant();
      if (format.json()) {
        ObjectNode node = summary(e, now);
        putTime(node, "started_at", e.startedAt());
        putTime(node, "completed_at", e.completedAt());
        node.put("side_effect_class", e.sideEffectClass());
        switch (e.outcome()) {
          case null -> {}
          case CallOutcome.Payload p -> {
            Optional<JsonNode> json = parseJson(p.bytes());
            Optional<String> text = utf8(p.bytes());
            if (json.isPresent()) {
              node.set("payload", json.get());
            } else if (text.isPresent()) {
              node.put("payload_text", text.get());
            } else {
              node.put("payload_base64", Base64.getEncoder().encodeToString(p.bytes()));
            }
          }
          case CallOutcome.Error err -> {
            ObjectNode en = node.putObject("error");
            en.put("code", err.code());
            en.put("message", err.message());
          }
        }
        out.println(toJson(node));
        return 0;
      }
      field(out, "call_id", e.callId());
      field(out, "state", e.state().label());
      field(out, "tool", dash(e.toolKey()));
      field(out, "session", dash(e.sessionId()));
      field(out, "side effect", dash(e.sideEffectClass()));
      if (e.startedAt() != null) {
        field(out, "started at", e.startedAt().toString());
      }
      if (e.completedAt() != null) {
        field(out, "completed at", e.completedAt().toString());
      }
      field(out, e.state().label() + " since", e.since() + " (" + age(e.age(now)) + " ago)");
      switch (e.outcome()) {
        case null ->
            out.println(
                e.state() == OutboxEntry.State.RUNNING
                    ? "no result yet: its handler is running"
                    : "no result: the worker stopped while its handler ran; it may or may not have"
                        + " acted");
        case CallOutcome.Payload p -> {
          field(out, "size", Count.bytes(p.bytes().length));
          out.println("payload:");
          Optional<JsonNode> json = parseJson(p.bytes());
          out.println(
              json.map(OutboxCommand::toJson)
                  .or(() -> utf8(p.bytes()))
                  .map(OutboxCommand::printableLines)
                  .orElse("(binary, base64) " + Base64.getEncoder().encodeToString(p.bytes())));
        }
        case CallOutcome.Error err -> field(out, "error", err.code() + ": " + err.message());
      }
      return 0;
    }
  }

  // ---- purge ----

  /** Exactly one filter is required: purging everything must be asked for. */
  static final class PurgeFilter {
    @Option(
        names = "--older-than",
        paramLabel = "D",
        converter = DurationParser.class,
        description = "Purge calls at least this long in their state, e.g. 7d, 12h, PT30M.")
    Duration olderThan;

    @Option(names = "--all", description = "Purge every orphaned and interrupted call.")
    boolean all;
  }

  @Command(
      name = "purge",
      mixinStandardHelpOptions = true,
      description = {
        "Deletes orphaned and interrupted calls from the state dir.",
        "Needs the state dir's lock: stop the worker first. A filter is required."
      },
      exitCodeOnInvalidInput = 1,
      exitCodeListHeading = EXIT_HEADING,
      exitCodeList = {
        EXIT_OK,
        "1:usage error (no filter), no state dir, worker running, or I/O " + "error"
      })
  static final class PurgeCommand implements Callable<Integer> {
    @ParentCommand OutboxCommand parent;
    @CommandLine.Spec CommandLine.Model.CommandSpec spec;
    @Mixin StateDirOption stateDir;

    @ArgGroup(exclusive = true, multiplicity = "1")
    PurgeFilter filter;

    @Option(
        names = "--include-held",
        description = "Also purge held results: the runtime will " + "never receive them.")
    boolean includeHeld;

    @Mixin FormatOption format;

    @Override
    public Integer call() throws IOException {
      Path dir = stateDir.resolveMigrating();
      read(dir); // fails clearly if there is no state dir; never creates one
      Instant now = parent.clock.instant();
      List<OutboxEntry> purged = new ArrayList<>();
      try (StateDir sd = openForPurge(dir);
          DurableOutbox outbox =
              DurableOutbox.open(
                  sd, new DurableOutbox.Options(Durability.NONE, null, parent.clock))) {
        warnProblems(spec, outbox.problems());
        for (OutboxEntry e : outbox.entries()) {
          boolean stateMatches =
              e.state() == OutboxEntry.State.ORPHANED
                  || e.state() == OutboxEntry.State.INTERRUPTED
                  || (includeHeld && e.state() == OutboxEntry.State.HELD);
          boolean oldEnough = filter.all || e.age(now).compareTo(filter.olderThan) >= 0;
          if (stateMatches && oldEnough && outbox.remove(e.callId())) {
            purged.add(e);
          }
        }
      }
      PrintWriter out = spec.commandLine().getOut();
      if (format.json()) {
        ObjectNode root = JSON.createObjectNode();
        root.put("state_dir", dir.toString());
        ArrayNode arr = root.putArray("purged");
        purged.forEach(e -> arr.add(summary(e, now)));
        out.println(toJson(root));
      } else {
        for (OutboxEntry e : purged) {
          out.println(
              "purged "
                  + Printable.of(e.callId())
                  + " ("
                  + e.state().label()
                  + ", "
                  + Printable.of(dash(e.toolKey()))
                  + ", "
                  + age(e.age(now))
                  + ")");
        }
        out.println(
            "purged " + purged.size() + (purged.size() == 1 ? " call" : " calls") + " from " + dir);
      }
      return 0;
    }

    private static StateDir openForPurge(Path dir) throws IOException {
      try {
        return StateDir.open(dir);
      } catch (StateDirRefusedException e) {
        throw new UserErrorException(e.getMessage(), e);
      } catch (StateDirLockedException e) {
        throw new UserErrorException(
            "cannot purge "
                + dir
                + ": a worker (pid "
                + (e.holderPid().isPresent() ? e.holderPid().getAsLong() : "unknown")
                + ") is using it; stop the worker first");
      }
    }
  }

  // ---- shared ----

  static OutboxView read(Path dir) throws IOException {
    try {
      return OutboxView.read(dir);
    } catch (NoSuchFileException e) {
      throw new UserErrorException(
          "no state dir at " + dir + " (set --state-dir or " + StateDirOption.ENV + ")");
    }
  }

  static void warnProblems(CommandLine.Model.CommandSpec spec, List<String> problems) {
    for (String p : problems) {
      spec.commandLine().getErr().println("warning: damaged outbox data: " + Printable.of(p));
    }
  }

  static ObjectNode summary(OutboxEntry e, Instant now) {
    ObjectNode n = JSON.createObjectNode();
    n.put("call_id", e.callId());
    n.put("state", e.state().label());
    n.put("tool", e.toolKey());
    n.put("session_id", e.sessionId());
    putTime(n, "since", e.since());
    n.put("age_seconds", e.age(now).toSeconds());
    n.put("size_bytes", e.size());
    return n;
  }

  private static void putTime(ObjectNode n, String field, Instant t) {
    if (t == null) {
      n.putNull(field);
    } else {
      n.put(field, t.toString());
    }
  }

  private static String toJson(JsonNode node) {
    try {
      return JSON.writeValueAsString(node);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }

  private static Optional<JsonNode> parseJson(byte[] bytes) {
    try {
      JsonNode n = JSON.readTree(bytes);
      return n == null || n.isMissingNode() ? Optional.empty() : Optional.of(n);
    } catch (IOException e) {
      return Optional.empty();
    }
  }

  private static Optional<String> utf8(byte[] bytes) {
    try {
      return Optional.of(
          StandardCharsets.UTF_8.newDecoder().decode(ByteBuffer.wrap(bytes)).toString());
    } catch (CharacterCodingException e) {
      return Optional.empty();
    }
  }

  /** Each line of {@code text} escaped ({@link Printable}), the line breaks kept. */
  private static String printableLines(String text) {
    return text.lines().map(Printable::of).collect(java.util.stream.Collectors.joining("\n"));
  }

  private static void field(PrintWriter out, String label, String value) {
    out.println(label + ":" + " ".repeat(Math.max(1, 19 - label.length())) + Printable.of(value));
  }

  static String dash(String s) {
    return s == null || s.isEmpty() ? "-" : s;
  }

  /** {@code 3d4h}, {@code 12m5s}, {@code 45s}: two most significant units. */
  static String age(Duration d) {
    long s = d.toSeconds();
    if (s < 60) {
      return s + "s";
    }
    if (s < 3600) {
      return s / 60 + "m" + (s % 60 == 0 ? "" : s % 60 + "s");
    }
    if (s < 86400) {
      return s / 3600 + "h" + (s % 3600 / 60 == 0 ? "" : s % 3600 / 60 + "m");
    }
    return s / 86400 + "d" + (s % 86400 / 3600 == 0 ? "" : s % 86400 / 3600 + "h");
  }

  private static void printTable(PrintWriter out, List<String[]> rows) {
    StringBuilder sb = new StringBuilder(); // escaped there: call ids come from the runtime
    TextColumns.append(sb, rows.stream().map(List::of).toList(), true);
    out.print(sb);
  }
}
