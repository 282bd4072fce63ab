package io.retrybudget.bench.relay;

import io.retrybudget.relay.RelaySettings;

/**
 * One virtual-time storm: {@code clients} clients of one budget, each {@code firstPerSecond} first
 * attempts a second; {@code relays} relays between them and Redis (0: the clients call Redis
 * directly, the design before the relay tier); {@code warmupSeconds} not recorded, then
 * {@code healthySeconds}, {@code outageSeconds} in which every attempt fails, {@code afterSeconds}.
 *
 * <p>The outage begins {@code outageOffsetMillis} into its first second (0 unless set).
 *
 * @param fault {@code none}, {@code kill} (relay 0 killed at {@code faultAtOutageSecond} of the
 *     outage), {@code restart} (killed, then started again 2 s later), {@code cut} (relay 0 cut off
 *     from Redis from then on)
 */
record RelayStormOptions(int clients, int relays, int clientsPerProcess, int warmupSeconds, int healthySeconds,
    int outageSeconds, int afterSeconds, int firstPerSecond, long ratioPpm, int floor, int maxCallsPerSecond,
    int maxAttempts, long seed, String fault, int faultAtOutageSecond, RelaySettings relay,
    int outageOffsetMillis) {

  /** The scenario of issue 27 for {@code clients} clients through {@code relays} relays. */
  static RelayStormOptions storm(int clients, int relays) {
    return new RelayStormOptions(clients, relays, 1_000, 10, 5, 30, 5, 2, 100_000, 10, 2_000, 3, 1, "none", 10,
        RelaySettings.defaults(), 0);
  }

  RelayStormOptions withFault(String f, int atOutageSecond) {
    return new RelayStormOptions(clients, relays, clientsPerProcess, warmupSeconds, healthySeconds, outageSeconds,
        afterSeconds, firstPerSecond, ratioPpm, floor, maxCallsPerSecond, maxAttempts, seed, f, atOutageSecond, relay,
        outageOffsetMillis);
  }

  RelayStormOptions withSeconds(int warmup, int healthy, int outage, int after) {
    return new RelayStormOptions(clients, relays, clientsPerProcess, warmup, healthy, outage, after, firstPerSecond,
        ratioPpm, floor, maxCallsPerSecond, maxAttempts, seed, fault, faultAtOutageSecond, relay,
        outageOffsetMillis);
  }

  RelayStormOptions withCeiling(int maxCalls) {
    return new RelayStormOptions(clients, relays, clientsPerProcess, warmupSeconds, healthySeconds, outageSeconds,
        afterSeconds, firstPerSecond, ratioPpm, floor, maxCalls, maxAttempts, seed, fault, faultAtOutageSecond, relay,
        outageOffsetMillis);
  }

  RelayStormOptions withClientsPerProcess(int perProcess) {
    return new RelayStormOptions(clients, relays, perProcess, warmupSeconds, healthySeconds, outageSeconds,
        afterSeconds, firstPerSecond, ratioPpm, floor, maxCallsPerSecond, maxAttempts, seed, fault, faultAtOutageSecond,
        relay, outageOffsetMillis);
  }

  RelayStormOptions withFirstPerSecond(int perSecond) {
    return new RelayStormOptions(clients, relays, clientsPerProcess, warmupSeconds, healthySeconds, outageSeconds,
        afterSeconds, perSecond, ratioPpm, floor, maxCallsPerSecond, maxAttempts, seed, fault, faultAtOutageSecond,
        relay, outageOffsetMillis);
  }

  /**
   * The outage starts {@code millis} into its first second instead of at its start (so that second is
   * part healthy, as a real outage's first second is): [0, 1000).
   */
  RelayStormOptions withOutageOffsetMillis(int millis) {
    if (millis < 0 || millis >= 1_000) {
      throw new IllegalArgumentException("outageOffsetMillis must be in [0, 1000), was " + millis);
    }
    return new RelayStormOptions(clients, relays, clientsPerProcess, warmupSeconds, healthySeconds, outageSeconds,
        afterSeconds, firstPerSecond, ratioPpm, floor, maxCallsPerSecond, maxAttempts, seed, fault, faultAtOutageSecond,
        relay, millis);
  }

  /** Recorded seconds (warm-up not included). */
  int seconds() {
    return healthySeconds + outageSeconds + afterSeconds;
  }

  String design() {
    return relays == 0 ? "direct" : relays + " relays";
  }
}
