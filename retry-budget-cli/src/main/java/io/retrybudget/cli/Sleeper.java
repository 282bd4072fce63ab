package io.retrybudget.cli;

import java.time.Duration;

/** Waits between refreshes of {@code watch}; tests pass one that advances a fake clock instead. */
@FunctionalInterface
interface Sleeper {
  /** The real one: {@link Thread#sleep}. */
  Sleeper SYSTEM = d -> Thread.sleep(d.toMillis());

  void sleep(Duration duration) throws InterruptedException;
}
