package io.retrybudget.server.example;

import java.util.OptionalLong;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The payments example's downstream system: it takes a charge only with a fencing token at least as
 * high as any it has taken for the same payment (Kleppmann's fencing tokens). A handler paused past
 * its lease (a GC pause, a partition from Redis) whose key was meanwhile claimed again by a duplicate
 * holds a lower token than the new holder: its late write is refused instead of charging twice. In
 * a real service this check lives in the database write (a conditional update on a {@code fence}
 * column) or in the payment provider's API, not in memory.
 */
final class FencedLedger {
  private final ConcurrentHashMap<String, Long> highestFence = new ConcurrentHashMap<>();
  private final AtomicLong charges = new AtomicLong();

  FencedLedger() {}

  /**
   * Records a charge for {@code payment} under {@code fence}: true when taken, false when a holder
   * with a higher token has written already (this writer is stale). Empty fence (an unguarded
   * request): always taken.
   */
  boolean charge(String payment, OptionalLong fence) {
    if (fence.isEmpty()) {
      charges.incrementAndGet();
      return true;
    }
    long mine = fence.getAsLong();
    boolean[] taken = new boolean[1];
    highestFence.compute(payment, (k, highest) -> {
      if (highest != null && highest > mine) {
        return highest; // a newer holder wrote: refuse the stale one
      }
      taken[0] = true;
      return mine;
    });
    if (taken[0]) {
      charges.incrementAndGet();
    }
    return taken[0];
  }

  long charges() {
    return charges.get();
  }
}
