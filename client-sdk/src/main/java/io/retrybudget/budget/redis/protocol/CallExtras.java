package io.retrybudget.budget.redis.protocol;

import java.util.List;

/**
 * What a budget.lua call says beyond its counts (ARGV[13]'s options and the held items after the counts
 * in doubt, lua/README.md): {@code hold}, a client's ask for a {@link RelayTag} (a relay's; budget.lua
 * ignores it); {@code through}, a relay's own call's last batch ({@code through=<k>}: every batch at or
 * below it is in this call or in one Redis applied; 0: none); and {@code held}, the items carried.
 */
public record CallExtras(boolean hold, long through, List<HeldCounts> held) {
  /** The most held items one call carries (budget.lua's limit). */
  public static final int MAX_HELD = 256;
  /** Nothing beyond the counts. */
  public static final CallExtras NONE = new CallExtras(false, 0, List.of());

  public CallExtras {
    held = held == null ? List.of() : List.copyOf(held);
    if (through < 0 || held.size() > MAX_HELD) {
      throw new IllegalArgumentException("bad call extras: through=" + through + ", held items " + held.size()
          + " (at most " + MAX_HELD + ")");
    }
  }

  /** A client's call asking for a relay tag and carrying {@code held}. */
  public static CallExtras holding(List<HeldCounts> held) {
    return new CallExtras(true, 0, held);
  }

  /** A relay's own call through {@code batch}, forwarding {@code held}. */
  public static CallExtras through(long batch, List<HeldCounts> held) {
    return new CallExtras(false, batch, held);
  }

  /** ARGV[13]'s options after {@code mark} ("again", a floor's "first=n", or empty). */
  String options(String mark) {
    StringBuilder b = new StringBuilder(mark);
    if (hold) {
      b.append(b.length() > 0 ? "," : "").append("hold");
    }
    if (through > 0) {
      b.append(b.length() > 0 ? "," : "").append("through=").append(through);
    }
    return b.toString();
  }
}
