package io.retrybudget.relay;

/**
 * The relay's rules as pure functions of what it knows: no state, no clock, no overflow at any input
 * (every product that could leave a long is done in double and clamped).
 */
public final class RelayArithmetic {
  /**
   * The burst a budget saves up, ms of its refill rate (budget.lua's cap on the paced balance: half a
   * second): a cold relay's first draw asks for its clients' part of it.
   */
  static final long BURST_MILLIS = 500;

  private RelayArithmetic() {}

  /**
   * The interval between one budget's calls to Redis from one relay: {@code callers} (the callers Redis
   * counts: relays and clients that talk to it directly) calling every interval use {@code share} of
   * the ceiling {@code maxCallsPerSecond}: {@code ceil(callers * 1000 / (share * C))} ms, within
   * [min, max].
   */
  public static long upstreamIntervalMillis(long callers, int maxCallsPerSecond, double share, long min, long max) {
    double allowed = Math.max(1e-9, share * Math.max(1, maxCallsPerSecond));
    double interval = Math.ceil(Math.max(1, callers) * 1000.0 / allowed);
    return Math.max(min, Math.min(max, (long) Math.min(Long.MAX_VALUE / 2, interval)));
  }

  /**
   * The fleet's size as a relay estimates it. Redis counts each relay as one caller, so its count
   * ({@code redisCallers}) says only that the fleet holds this relay's clients and at least one client
   * behind each other caller: {@code own + redisCallers - 1}. Clients alike send alike, so the fleet is
   * also this relay's clients scaled by its share of the window's first attempts
   * ({@code own * fleetRequests / ownRequests}, once this relay has counted any and Redis holds more);
   * the estimate is the larger of the two.
   *
   * @param own clients this relay counts
   * @param ownRequests first attempts this relay had applied in Redis's current window
   * @param fleetRequests first attempts in Redis's window (its last reply)
   * @param redisCallers the callers Redis counts ({@code active_clients})
   */
  public static long fleetEstimate(long own, long ownRequests, long fleetRequests, long redisCallers) {
    long floor = Math.max(1, own) + Math.max(0, redisCallers - 1);
    if (ownRequests <= 0 || fleetRequests <= ownRequests) {
      return floor;
    }
    double scaled = Math.ceil(Math.max(1, own) * (double) fleetRequests / ownRequests);
    return Math.max(floor, (long) Math.min(1e15, scaled));
  }

  /**
   * The call ceiling a relay tells its clients, in the terms a client's flush schedule and ask sampling
   * read it: they take {@code N / C} of a fleet of N against a ceiling C, so a relay with {@code own}
   * of a fleet's {@code fleet} clients says {@code C = clientCalls * fleet / own}, and its own clients'
   * calls then add up to {@code clientCalls} a second, while the fleet size they are told stays the
   * whole fleet's (their fallback's share of the floor is floor / fleet). Within [1, Integer.MAX_VALUE].
   */
  public static int clientCeiling(int clientCalls, long fleet, long own) {
    double c = Math.ceil(clientCalls * (double) Math.max(1, fleet) / Math.max(1, own));
    return (int) Math.max(1, Math.min(Integer.MAX_VALUE, c));
  }

  /**
   * How many permits one draw from Redis asks for: what the relay's clients ask for until the draw
   * after it ({@code demandPerSecond} over {@code intervalMillis}, a quarter more for the interval's
   * randomness, rounded up) less what it holds, within [0, {@code cap}].
   */
  public static long drawSize(double demandPerSecond, long intervalMillis, long held, long cap) {
    if (!(demandPerSecond > 0)) {
      return 0;
    }
    double wanted = Math.ceil(demandPerSecond * Math.max(0, intervalMillis) / 1000.0 * 1.25) - Math.max(0, held);
    return (long) Math.max(0, Math.min(cap, wanted));
  }

  /**
   * How many permits a cold relay's draw asks for (one that has drawn for none of its clients' asks:
   * they have only begun, and what it has seen of them says little yet of what follows): its clients'
   * paced share, the budget's ratio over their first attempts a second plus their share of the floor,
   * over {@code horizonMillis} (until the draw after it) a quarter more, and over the burst the budget
   * saved up ({@link #BURST_MILLIS}), rounded up, less what it holds, within [0, {@code cap}]. In a
   * storm every first attempt asks, so that is what its clients are due, as they would take it from
   * Redis directly; when fewer ask, what is not handed out is dropped unused (Redis counted it: the
   * safe side; the balance it came from refills within half a second).
   *
   * @param firstPerSecond its clients' first attempts a second
   * @param floorMicros their share of the floor, micro-permits a second ({@link #floorShareMicros})
   */
  static long coldDrawSize(double firstPerSecond, long ratioPpm, long floorMicros, long horizonMillis,
      long held, long cap) {
    double perSecond = Math.max(0, firstPerSecond) * Math.max(0, ratioPpm) / 1e6 + Math.max(0, floorMicros) / 1e6;
    if (!(perSecond > 0)) {
      return 0;
    }
    double millis = Math.max(0, horizonMillis) * 1.25 + BURST_MILLIS;
    double wanted = Math.ceil(perSecond * millis / 1000.0) - Math.max(0, held);
    return (long) Math.max(0, Math.min(cap, wanted));
  }

  /**
   * The floor, micro-permits a second, that a relay cut off from Redis grants from: the budget's floor
   * ({@code floorPerSecond}) times its share of the fleet's clients, {@code own / fleet} (none before
   * the fleet is known), so that cut-off relays together never grant more than one floor.
   */
  public static long floorShareMicros(long floorPerSecond, long own, long fleet) {
    if (floorPerSecond <= 0 || own <= 0 || fleet <= 0) {
      return 0;
    }
    double share = Math.min(1.0, own / (double) fleet);
    return (long) Math.floor(floorPerSecond * 1_000_000.0 * share);
  }
}
