package io.retrybudget.budget.redis.protocol;


/**
 * A client's counts that a relay took into one of its batches and may not have sent to Redis (a "held
 * item", budget.lua's ARGV elements {@code held=...}): the client keeps them until the relay says the
 * batch is settled ({@link RelayTag}), and if the relay is gone first it carries them, through another
 * relay or to Redis directly. budget.lua adds them only if the relay never applied that batch, and then
 * credits the relay's entry so that the relay, should it apply the batch later, does not add them again
 * (lua/README.md, "Held items"). Carried again, by any way, they are added once.
 *
 * @param relay the id the relay calls Redis with (its {@link ClientSequence#clientId()})
 * @param batch the relay's batch the counts went into (at least 1)
 * @param client the id of the client whose counts they are
 * @param requests first attempts
 * @param denied refusals
 * @param retries fallback grants
 * @param part which of the client's parts of that batch (at least 1): a client that carried some of a
 *     batch's counts and then reported into the same batch again carries the rest as the next part
 *     (budget.lua keeps the last batch and part it added per relay and client, and adds only later ones)
 */
public record HeldCounts(String relay, long batch, String client, long requests, long denied, long retries,
    long part) {
  private static final String PREFIX = "held=";
  /** The largest number budget.lua takes in a held item (2^53: exact in its doubles). */
  public static final long MAX_NUMBER = 1L << 53;

  public HeldCounts {
    if (!validId(relay) || !validId(client)) {
      throw new IllegalArgumentException("held counts need ids of [A-Za-z0-9._-]{1,100}, was relay=" + relay
          + ", client=" + client);
    }
    if (batch < 1 || requests < 0 || denied < 0 || retries < 0 || part < 1
        || Math.max(Math.max(batch, part), Math.max(requests, Math.max(denied, retries))) > MAX_NUMBER) {
      throw new IllegalArgumentException("bad held counts: batch=" + batch + ", requests=" + requests + ", denied="
          + denied + ", retries=" + retries + ", part=" + part);
    }
  }

  /** The first part of a batch. */
  public HeldCounts(String relay, long batch, String client, long requests, long denied, long retries) {
    this(relay, batch, client, requests, denied, retries, 1);
  }

  /** Whether {@code id} may name a relay or a client in a held item: [A-Za-z0-9._-]{1,100}. */
  public static boolean validId(String id) {
    if (id == null || id.isEmpty() || id.length() > 100) {
      return false;
    }
    for (int i = 0; i < id.length(); i++) { // [A-Za-z0-9._-], without a regex: a client checks each reply's tag
      char c = id.charAt(i);
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_'
          || c == '-')) {
        return false;
      }
    }
    return true;
  }

  /** Whether an ARGV element is a held item (they follow the counts in doubt). */
  public static boolean isArg(String arg) {
    return arg.startsWith(PREFIX);
  }

  /** budget.lua's ARGV element: {@code held=<relay>,<batch>,<client>,<requests>,<denied>,<retries>[,<part>]}. */
  public String arg() {
    return PREFIX + relay + ',' + batch + ',' + client + ',' + requests + ',' + denied + ',' + retries
        + (part > 1 ? "," + part : "");
  }

  /** Reads {@link #arg()}; refuses anything else by name. */
  public static HeldCounts parse(String arg) {
    if (arg == null || !arg.startsWith(PREFIX) || arg.length() > 400) {
      throw new IllegalArgumentException("invalid held: not held=<relay>,<batch>,<client>,<q>,<d>,<r>[,<p>]");
    }
    String[] p = arg.substring(PREFIX.length()).split(",", -1);
    if (p.length != 6 && p.length != 7) {
      throw new IllegalArgumentException("invalid held: not held=<relay>,<batch>,<client>,<q>,<d>,<r>[,<p>]");
    }
    return new HeldCounts(p[0], number(p[1]), p[2], number(p[3]), number(p[4]), number(p[5]),
        p.length == 7 ? number(p[6]) : 1);
  }

  /** Digits only, as budget.lua reads them (no sign, no space), at most {@link #MAX_NUMBER}. */
  private static long number(String s) {
    if (s.isEmpty() || s.length() > 16 || !s.chars().allMatch(c -> c >= '0' && c <= '9')) {
      throw new IllegalArgumentException("invalid held: a number is not digits up to 2^53, was '"
          + (s.length() > 20 ? s.substring(0, 20) + "..." : s) + "'");
    }
    return Long.parseLong(s);
  }
}
