package io.retrybudget.testing;

import java.time.Duration;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/** Polls a condition that a real external process (Redis) or a real timer makes true. */
public final class Eventually {
  private Eventually() {}

  /** Returns the milliseconds it took; throws AssertionError when {@code within} passes first. */
  public static long await(String what, Duration within, BooleanSupplier condition) {
    long start = System.nanoTime();
    long deadline = start + within.toNanos();
    while (true) {
      if (condition.getAsBoolean()) {
        return (System.nanoTime() - start) / 1_000_000;
      }
      if (System.nanoTime() > deadline) {
        throw new AssertionError("not within " + within + ": " + what);
      }
      LockSupport.parkNanos(5_000_000);
    }
  }
}
