package io.retrybudget.budget.redis.protocol;

/**
 * What a relay tells a client that asked ({@code hold} in ARGV[13]) about the counts it just took, as a
 * seventeenth value of its reply: the relay's id at Redis, the batch they went into, the last batch all
 * of whose counts Redis applied ({@code settled}), and whether it took the held items the call carried.
 * The client keeps its counts of a batch above {@code settled} ({@link HeldCounts}) until a later reply
 * from the same relay settles it.
 *
 * @param relay the relay's id at Redis
 * @param batch the batch this call's counts went into (at least 1)
 * @param settled every batch at or below it is in a call Redis applied (at least 0)
 * @param took whether the held items this call carried were taken (else the client carries them again)
 */
public record RelayTag(String relay, long batch, long settled, boolean took) {
  public RelayTag {
    if (!HeldCounts.validId(relay) || batch < 1 || settled < 0 || batch > HeldCounts.MAX_NUMBER
        || settled > HeldCounts.MAX_NUMBER) {
      throw new IllegalArgumentException("bad relay tag: relay=" + relay + ", batch=" + batch + ", settled=" + settled);
    }
  }

  /** The wire form, {@code <relay>,<batch>,<settled>,<took: 1 or 0>}. */
  public String wire() {
    return wire(relay, batch, settled, took);
  }

  /**
   * The wire form of a tag whose parts a relay knows are valid (its own id, its batches), without the
   * record's checks: a relay writes one for every reply.
   */
  public static String wire(String relay, long batch, long settled, boolean took) {
    return relay + ',' + batch + ',' + settled + ',' + (took ? '1' : '0');
  }

  /** Reads {@link #wire()}; refuses anything else by name. */
  public static RelayTag parse(String wire) {
    // by hand: a client reads one with every reply of a relay
    int a = wire == null || wire.length() > 200 ? -1 : wire.indexOf(',');
    int b = a < 0 ? -1 : wire.indexOf(',', a + 1);
    int c = b < 0 ? -1 : wire.indexOf(',', b + 1);
    if (c < 0 || c != wire.length() - 2 || (wire.charAt(c + 1) != '0' && wire.charAt(c + 1) != '1')) {
      throw new IllegalArgumentException("invalid relay tag: not <relay>,<batch>,<settled>,<0|1>");
    }
    long batch = digits(wire, a + 1, b);
    long settled = digits(wire, b + 1, c);
    if (batch < 0 || settled < 0) {
      throw new IllegalArgumentException("invalid relay tag: a number is not digits");
    }
    return new RelayTag(wire.substring(0, a), batch, settled, wire.charAt(c + 1) == '1');
  }

  /** The digits of {@code s[from, to)} as a number, or -1 when they are not 1 to 18 digits. */
  private static long digits(String s, int from, int to) {
    if (to <= from || to - from > 18) {
      return -1;
    }
    long v = 0;
    for (int i = from; i < to; i++) {
      char ch = s.charAt(i);
      if (ch < '0' || ch > '9') {
        return -1;
      }
      v = v * 10 + (ch - '0');
    }
    return v;
  }
}
