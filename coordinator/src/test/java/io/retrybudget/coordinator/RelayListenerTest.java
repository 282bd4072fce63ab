package io.retrybudget.coordinator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The relay's settings from the environment: every wrong value refused, naming its variable. */
class RelayListenerTest {
  private static final String REDIS = "redis://127.0.0.1:6379";

  private static CoordinatorConfig config(String... pairs) {
    Map<String, String> env = new HashMap<>();
    for (int i = 0; i < pairs.length; i += 2) {
      env.put(pairs[i], pairs[i + 1]);
    }
    return CoordinatorConfig.fromEnvironment(env);
  }

  private static String refusal(String... pairs) {
    return assertThrows(IllegalArgumentException.class, () -> config(pairs)).getMessage();
  }

  @Test
  void offUnlessThePortIsSet() {
    CoordinatorConfig c = config("REDIS_URL", REDIS);
    assertNull(c.relay());
    assertFalse(c.relayOnly());
  }

  @Test
  void thePortTurnsItOnBesideTheApiWithItsDefaults() {
    CoordinatorConfig c = config("REDIS_URL", REDIS, "COORDINATOR_RELAY_PORT", "6380", "COORDINATOR_REDIS_TIMEOUT_MS", "250");
    assertEquals(new RelayListener("0.0.0.0", 6380, 10_000, null, 250, 100_000), c.relay());
    assertFalse(c.relayOnly());
    assertEquals(250, c.relay().options().upstreamTimeoutMillis());
    assertEquals("0.0.0.0", c.relay().options().host());
  }

  @Test
  void relayModeRunsItAloneAndWarnsOfWhatOnlyTheApiReads() {
    CoordinatorConfig c = config("REDIS_URL", REDIS, "COORDINATOR_MODE", " relay ", "COORDINATOR_RELAY_PORT", "0",
        "COORDINATOR_RELAY_HOST", "127.0.0.1", "COORDINATOR_RELAY_MAX_CONNECTIONS", "5",
        "COORDINATOR_RELAY_PASSWORD", "pw", "COORDINATOR_BUDGETS_FILE", "/b.json", "COORDINATOR_RELAY_CLIENT_CALLS", "4000");
    assertTrue(c.relayOnly());
    assertEquals(new RelayListener("127.0.0.1", 0, 5, "pw", 1_000, 4_000), c.relay());
    assertEquals(List.of("COORDINATOR_BUDGETS_FILE is ignored: COORDINATOR_MODE=relay serves no HTTP API"), c.warnings());
    assertFalse(c.relay().toString().contains("pw"), "never the password: " + c.relay());
    assertEquals(4_000, c.relay().options().settings().clientCallsPerSecond());
  }

  @Test
  void wrongValuesAreRefusedByName() {
    assertEquals("COORDINATOR_MODE must be coordinator (the HTTP API, and the relay when COORDINATOR_RELAY_PORT is "
        + "set) or relay (the relay alone), was 'sidecar'", refusal("REDIS_URL", REDIS, "COORDINATOR_MODE", "sidecar"));
    assertEquals("COORDINATOR_MODE=relay needs COORDINATOR_RELAY_PORT (0 for a free port)",
        refusal("REDIS_URL", REDIS, "COORDINATOR_MODE", "relay"));
    assertEquals("COORDINATOR_MODE=relay needs REDIS_URL or REDIS_CLUSTER_NODES: the Redis the fleet shares",
        refusal("COORDINATOR_MODE", "relay", "COORDINATOR_RELAY_PORT", "6380"));
    assertEquals("COORDINATOR_RELAY_PORT must be an integer in [0, 65535], was '70000'",
        refusal("REDIS_URL", REDIS, "COORDINATOR_RELAY_PORT", "70000"));
    assertEquals("COORDINATOR_RELAY_MAX_CONNECTIONS must be an integer in [1, 1000000], was '0'",
        refusal("REDIS_URL", REDIS, "COORDINATOR_RELAY_PORT", "1", "COORDINATOR_RELAY_MAX_CONNECTIONS", "0"));
    assertEquals("COORDINATOR_RELAY_CLIENT_CALLS must be an integer in [10, 10000000], was '5'",
        refusal("REDIS_URL", REDIS, "COORDINATOR_RELAY_PORT", "1", "COORDINATOR_RELAY_CLIENT_CALLS", "5"));
    assertEquals("COORDINATOR_RELAY_HOST must be a host name or an IP address, was 'a b'",
        refusal("REDIS_URL", REDIS, "COORDINATOR_RELAY_PORT", "1", "COORDINATOR_RELAY_HOST", "a b"));
    assertEquals("COORDINATOR_RELAY_HOST is set but COORDINATOR_RELAY_PORT is not: set the port to run the relay",
        refusal("REDIS_URL", REDIS, "COORDINATOR_RELAY_HOST", "127.0.0.1"));
  }

  @Test
  void everyRelayVariableIsOneTheCoordinatorDeclares() {
    assertTrue(CoordinatorConfig.VARIABLES.containsAll(RelayListener.VARIABLES));
    assertTrue(CoordinatorConfig.VARIABLES.containsAll(RelayListener.API_ONLY));
  }
}
