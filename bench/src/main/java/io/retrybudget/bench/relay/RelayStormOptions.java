package io.retrybudget.bench.relay;

import io.retrybudget.relay.RelaySettings;

/**
 * One virtual-time storm: {@code clients} clients of one budget, each {@code firstPerSecond} first
 * attempts a second; {@code relays} relays between them and Redis (0: the clients call Redis
 * directly, the design before the relay tier); {@code warmupSeconds} not recorded, then
 * {@code healthySeconds}, {@code outageSeconds} in which every attempt fails, {@code afterSeconds}.
 *
 * @param fault {@code none}, {@code kill} (relay 0 killed at {@code faultAtOutageSecond} of the
 *     outage), {@code restart} (killed, then started again 2 s later), {@code cut} (relay 0 cut off
 *     from Redis from then on)
 */
record RelayStormOptions(int clients, int relays, int clientsPerProcess, int warmupSeconds, int healthySeconds,
    int outageSeconds, int afterSeconds, int firstPerSecond, long ratioPpm, int floor, int maxCallsPerSecond,
    int maxAttempts, long seed, String fault, int faultAtOutageSecond, RelaySettings relay) {

  /** The scenario of issue 27 for {@code clients} clients through {@code relays} relays. */
  static RelayStormOptions storm(int clients, int relays) {
    return new RelayStormOptions(clients, relays, 1_000, 10, 5, 30, 5, 2, 100_000, 10, 2_000, 3, 1, "none", 10,
        RelaySettings.defaults());
  }

  RelayStormOptions withFault(String f, int atOutageSecond) {
    return new RelayStormOptions(clients, relays, clientsPerProcess, warmupSeconds, healthySeconds, outageSeconds,
        afterSeconds, firstPerSecond, ratioPpm, floor, maxCallsPerSecond, maxAttempts, seed, f, atOutageSecond, relay);
  }

  RelayStormOptions withSeconds(int warmup, int healthy, int outage, int after) {
    return new RelayStormOptions(clients, relays, clientsPerProcess, warmup, healthy, outage, after, firstPerSecond,
        ratioPpm, floor, maxCallsPerSecond, maxAttempts, seed, fault, faultAtOutageSecond, relay);
  }

  RelayStormOptions withCeiling(int maxCalls) {
    return new RelayStormOptions(clients, relays, clientsPerProcess, warmupSeconds, healthySeconds, outageSeconds,
        afterSeconds, firstPerSecond, ratioPpm, floor, maxCalls, maxAttempts, seed, fault, faultAtOutageSecond, relay);
  }

  RelayStormOptions withClientsPerProcess(int perProcess) {
    return new RelayStormOptions(clients, relays, perProcess, warmupSeconds, healthySeconds, outageSeconds,
        afterSeconds, firstPerSecond, ratioPpm, floor, maxCallsPerSecond, maxAttempts, seed, fault, faultAtOutageSecond,
        relay);
  }

  /** Recorded seconds (warm-up not included). */
  int seconds() {
    return healthySeconds + outageSeconds + afterSeconds;
  }

  String design() {
    return relays == 0 ? "direct" : relays + " relays";
  }
}
