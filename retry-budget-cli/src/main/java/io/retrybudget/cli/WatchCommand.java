package io.retrybudget.cli;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.PrintWriter;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParentCommand;
import picocli.CommandLine.Spec;

/**
 * {@code retry-budget watch}: the listing again and again, one refresh a second. On a terminal each
 * refresh redraws the screen and exhausted budgets are bold red; elsewhere the frames follow one
 * another (table) or come one JSON document a line (json). A failed refresh is shown and the next
 * one tried: a restarting coordinator does not end the watch. The refreshes are paced by the
 * injected clock and sleeper: each starts one interval after the previous one started (later when a
 * refresh took longer, never in a burst to catch up).
 */
@Command(name = "watch", description = {"A live table of every budget, refreshed every second; exhausted budgets "
    + "highlighted on a terminal. Ctrl-C stops it.",
    "Exit code with --count: 0 when the last refresh worked, 1 when it failed."})
final class WatchCommand implements Callable<Integer> {
  static final String CLEAR_SCREEN = "\u001b[H\u001b[2J";
  private static final DateTimeFormatter TIME = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss 'UTC'")
      .withZone(ZoneOffset.UTC);

  @ParentCommand RetryBudgetCli root;
  @Spec CommandSpec spec;

  @Option(names = "--count", paramLabel = "N", defaultValue = "0",
      description = "stop after N refreshes (default: ${DEFAULT-VALUE}, never)")
  int count;

  @Option(names = "--interval", paramLabel = "MS", defaultValue = "1000",
      description = "ms from the start of one refresh to the start of the next, 100 to 3600000 (default: ${DEFAULT-VALUE})")
  long intervalMillis;

  @Override
  public Integer call() {
    if (count < 0) {
      throw root.usage("--count: expected 0 (never stop) or more, was " + count);
    }
    if (intervalMillis < 100 || intervalMillis > 3_600_000) {
      throw root.usage("--interval: expected 100 to 3600000 ms, was " + intervalMillis);
    }
    CoordinatorClient client = root.client();
    CliContext context = root.context();
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    boolean failed = false;
    long started = 0;
    for (int i = 0; count == 0 || i < count; i++) {
      if (i > 0) {
        long wait = started + intervalMillis - context.clock().millis();
        if (wait > 0) {
          try {
            context.sleeper().sleep(Duration.ofMillis(wait));
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            break;
          }
        }
      }
      started = context.clock().millis();
      JsonNode listing = null;
      String failure = null;
      try {
        listing = client.list();
      } catch (CliFailure f) {
        failure = f.getMessage();
      }
      failed = failure != null;
      if (root.json()) {
        if (failed) {
          err.println("retry-budget: " + failure);
        } else {
          out.println(CoordinatorClient.compact(listing));
        }
      } else {
        String frame = frame(client.base(), Instant.ofEpochMilli(started), listing, failure, context.colour());
        out.print(context.terminal() ? CLEAR_SCREEN + frame : frame + "\n");
      }
      out.flush();
      err.flush();
    }
    return failed ? 1 : 0;
  }

  /** One refresh in table form: a header line, then the listing or why there is none. */
  String frame(String base, Instant at, JsonNode listing, String failure, boolean colour) {
    StringBuilder f = new StringBuilder();
    f.append("Every ").append(intervalMillis % 1000 == 0 ? intervalMillis / 1000 + " s" : intervalMillis + " ms")
        .append(": retry-budget watch  ").append(Text.clean(base)).append("  ").append(TIME.format(at)).append("\n\n");
    if (listing == null) {
      return f.append("no answer: ").append(failure).append('\n').toString();
    }
    f.append(BudgetViews.listing(listing, colour));
    int budgets = listing.path("budgets").size();
    int exhausted = 0;
    for (JsonNode b : listing.path("budgets")) {
      exhausted += b.path("exhausted").asBoolean(false) ? 1 : 0;
    }
    return f.append('\n').append(budgets).append(budgets == 1 ? " budget, " : " budgets, ").append(exhausted)
        .append(" exhausted\n").toString();
  }
}
