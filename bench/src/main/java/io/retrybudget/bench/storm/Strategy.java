package io.retrybudget.bench.storm;

import java.awt.Color;

/** How a simulated client decides whether to retry a failed attempt. */
enum Strategy {
  /** Always retry, up to the attempt limit. */
  NONE("none", "no budget", new Color(0xD62728)),
  /** One LocalRetryBudget per client with Finagle's defaults: 20%, 10 retries/s floor, 10 s. */
  LOCAL("local", "per-client budget (Finagle defaults)", new Color(0xFF7F0E)),
  /** One RedisRetryBudget per client, all sharing one fleet-wide budget in Redis. */
  FLEET("fleet", "fleet-wide budget (Redis)", new Color(0x1F77B4));

  final String id;
  final String label;
  final Color color;

  Strategy(String id, String label, Color color) {
    this.id = id;
    this.label = label;
    this.color = color;
  }

  static Strategy parse(String s) {
    for (Strategy st : values()) {
      if (st.id.equalsIgnoreCase(s)) {
        return st;
      }
    }
    throw new IllegalArgumentException("unknown strategy '" + s + "' (none, local, fleet)");
  }
}
