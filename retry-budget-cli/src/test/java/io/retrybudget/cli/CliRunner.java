package io.retrybudget.cli;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import picocli.CommandLine;

/** Runs the CLI in process with captured stdout and stderr, on fake time. */
final class CliRunner {
  record Result(int exit, String out, String err) {
    @Override
    public String toString() {
      return "exit " + exit + "\n--- out\n" + out + "--- err\n" + err;
    }
  }

  /** A clock that moves only when the sleeper sleeps; records every sleep. */
  static final class FakeTime extends Clock {
    final AtomicLong millis = new AtomicLong(Instant.parse("2026-12-02T00:40:00Z").toEpochMilli());
    final List<Duration> sleeps = new ArrayList<>();

    final Sleeper sleeper = d -> {
      synchronized (sleeps) {
        sleeps.add(d);
      }
      millis.addAndGet(d.toMillis());
    };

    @Override
    public ZoneId getZone() {
      return ZoneOffset.UTC;
    }

    @Override
    public Clock withZone(ZoneId zone) {
      throw new UnsupportedOperationException("the CLI formats in UTC itself");
    }

    @Override
    public Instant instant() {
      return Instant.ofEpochMilli(millis.get());
    }
  }

  final FakeTime time = new FakeTime();
  private final Map<String, String> env;
  private final boolean terminal;

  CliRunner(Map<String, String> env, boolean terminal) {
    this.env = env;
    this.terminal = terminal;
  }

  Result run(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    CommandLine cli = RetryBudgetCli.commandLine(new CliContext(env, terminal, time, time.sleeper));
    cli.setOut(new PrintWriter(out, true));
    cli.setErr(new PrintWriter(err, true));
    int exit = cli.execute(args);
    return new Result(exit, out.toString(), err.toString());
  }
}
