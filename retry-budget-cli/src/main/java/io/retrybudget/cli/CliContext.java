package io.retrybudget.cli;

import java.time.Clock;
import java.util.Map;

/**
 * What the CLI takes from the world besides its arguments, injected so that tests run it in process.
 *
 * @param env the environment (RETRY_BUDGET_URL, RETRY_BUDGET_TOKEN, NO_COLOR)
 * @param terminal whether stdout is a terminal (colour and screen clearing in {@code watch})
 * @param clock the time {@code watch} shows and paces its refreshes by
 * @param sleeper how {@code watch} waits for its next refresh
 */
record CliContext(Map<String, String> env, boolean terminal, Clock clock, Sleeper sleeper) {
  CliContext {
    env = Map.copyOf(env);
  }

  /** The real process: its environment, a terminal when System.console() exists, the system clock. */
  static CliContext system() {
    return new CliContext(System.getenv(), System.console() != null, Clock.systemUTC(), Sleeper.SYSTEM);
  }

  /** ANSI colour: only on a terminal, and never when NO_COLOR is set (no-color.org). */
  boolean colour() {
    String noColour = env.get("NO_COLOR");
    return terminal && (noColour == null || noColour.isEmpty());
  }
}
