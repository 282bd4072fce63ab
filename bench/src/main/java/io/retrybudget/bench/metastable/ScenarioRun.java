package io.retrybudget.bench.metastable;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * What one scenario produced for every arm, the model's or a real run's: the clients' and the
 * backend's per-second tables, Redis's budget calls per second for each arm that has a Redis of its
 * own (none in the model), and each arm's {@link ArmSummary}.
 */
record ScenarioRun(Scenario scenario, Params params, Map<Arm, PerSecond> calls, Map<Arm, PerSecond> server,
    Map<Arm, long[]> redisCalls) {

  Map<Arm, ArmSummary> summaries() {
    Map<Arm, ArmSummary> m = new LinkedHashMap<>();
    for (Arm arm : calls.keySet()) {
      m.put(arm, ArmSummary.of(arm, scenario, params, calls.get(arm), server.get(arm), redisCalls.get(arm)));
    }
    return m;
  }

  /** Runs every arm in the fake-time model. */
  static ScenarioRun model(Params p, Scenario sc, Iterable<Arm> arms, long seed) {
    Map<Arm, PerSecond> calls = new LinkedHashMap<>();
    Map<Arm, PerSecond> server = new LinkedHashMap<>();
    for (Arm arm : arms) {
      ModelRun.Result r = ModelRun.run(p, sc, arm, seed);
      calls.put(arm, r.calls());
      server.put(arm, r.server());
    }
    return new ScenarioRun(sc, p, calls, server, Map.of());
  }
}
