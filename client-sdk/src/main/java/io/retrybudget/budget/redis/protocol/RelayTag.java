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
    return relay + ',' + batch + ',' + settled + ',' + (took ? '1' : '0');
  }

  /** Reads {@link #wire()}; refuses anything else by name. */
  public static RelayTag parse(String wire) {
    String[] p = wire == null || wire.length() > 200 ? new String[0] : wire.split(",", -1);
    if (p.length != 4 || !(p[3].equals("0") || p[3].equals("1"))) {
      throw new IllegalArgumentException("invalid relay tag: not <relay>,<batch>,<settled>,<0|1>");
    }
    if (!digits(p[1]) || !digits(p[2])) {
      throw new IllegalArgumentException("invalid relay tag: a number is not digits");
    }
    return new RelayTag(p[0], Long.parseLong(p[1]), Long.parseLong(p[2]), p[3].equals("1"));
  }

  private static boolean digits(String s) {
    return !s.isEmpty() && s.length() <= 18 && s.chars().allMatch(c -> c >= '0' && c <= '9');
  }
}
