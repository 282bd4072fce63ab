package io.retrybudget.coordinator;

import io.retrybudget.coordinator.relay.RelayHostOptions;
import io.retrybudget.relay.RelaySettings;
import java.util.List;
import java.util.Map;

/**
 * The relay's listener, read from the environment with the rest of {@link CoordinatorConfig}: off
 * unless {@code COORDINATOR_RELAY_PORT} is set; {@code COORDINATOR_MODE=relay} runs the relay alone
 * (no HTTP API, no management listener), the shape of a relay per zone or a sidecar.
 *
 * @param host COORDINATOR_RELAY_HOST: the address to listen on (default 0.0.0.0, as the API)
 * @param port COORDINATOR_RELAY_PORT (0 picks a free one, logged at start)
 * @param maxConnections COORDINATOR_RELAY_MAX_CONNECTIONS: client connections at once (default 10000)
 * @param password COORDINATOR_RELAY_PASSWORD: what clients send with AUTH (their URI's password), or
 *     null for none
 * @param upstreamTimeoutMillis COORDINATOR_REDIS_TIMEOUT_MS: a call of the relay's to Redis not
 *     answered within this counts as failed
 * @param clientCallsPerSecond COORDINATOR_RELAY_CLIENT_CALLS: the calls a second the relay takes from
 *     one budget's clients (default 100000), what it can answer: the clients stretch their flushes and
 *     sample their asks to stay under it, as under Redis's ceiling
 */
public record RelayListener(String host, int port, int maxConnections, String password, long upstreamTimeoutMillis,
    int clientCallsPerSecond) {
  public static final String DEFAULT_HOST = "0.0.0.0";
  public static final int DEFAULT_MAX_CONNECTIONS = 10_000;
  public static final int DEFAULT_CLIENT_CALLS = RelaySettings.defaults().clientCallsPerSecond();
  /** The variables of the relay (COORDINATOR_MODE among them). */
  public static final List<String> VARIABLES = List.of("COORDINATOR_MODE", "COORDINATOR_RELAY_PORT",
      "COORDINATOR_RELAY_HOST", "COORDINATOR_RELAY_MAX_CONNECTIONS", "COORDINATOR_RELAY_PASSWORD",
      "COORDINATOR_RELAY_CLIENT_CALLS");
  /** What only the HTTP API reads: set in relay mode, each is named in a warning at start. */
  static final List<String> API_ONLY = List.of("COORDINATOR_PORT", "COORDINATOR_TOKEN", "COORDINATOR_BUDGETS_FILE",
      "COORDINATOR_BUDGETS_FILE_CHECK_MS", "COORDINATOR_MAX_BUDGETS", "COORDINATOR_AUTO_CREATE",
      "COORDINATOR_MAX_CONNECTIONS", "COORDINATOR_HEADER_TIMEOUT_MS", "COORDINATOR_BODY_TIMEOUT_MS",
      "COORDINATOR_IDLE_TIMEOUT_MS", "COORDINATOR_PROBE_RESERVE", "COORDINATOR_METRICS_CACHE_MS",
      "COORDINATOR_MAX_CONNECTIONS_PER_IP", "COORDINATOR_MANAGEMENT_PORT", "COORDINATOR_MANAGEMENT_MAX_CONNECTIONS",
      "COORDINATOR_LIVENESS_STALL_MS");

  /** The options of the {@link io.retrybudget.coordinator.relay.RelayHost} this listener runs. */
  public RelayHostOptions options() {
    return RelayHostOptions.builder().host(host).port(port).maxConnections(maxConnections).password(password)
        .upstreamTimeoutMillis(upstreamTimeoutMillis)
        .settings(RelaySettings.builder().clientCallsPerSecond(clientCallsPerSecond).build()).build();
  }

  /** True when {@code COORDINATOR_MODE} is {@code relay}; refuses any value but that and {@code coordinator}. */
  static boolean relayOnly(Map<String, String> env) {
    String mode = env.get("COORDINATOR_MODE");
    if (mode == null || mode.isBlank() || mode.strip().equals("coordinator")) {
      return false;
    }
    if (mode.strip().equals("relay")) {
      return true;
    }
    throw new IllegalArgumentException("COORDINATOR_MODE must be coordinator (the HTTP API, and the relay when "
        + "COORDINATOR_RELAY_PORT is set) or relay (the relay alone), was '" + mode + "'");
  }

  /**
   * The relay's listener, or null when COORDINATOR_RELAY_PORT is unset (and the mode is not relay);
   * {@code redisTimeoutMillis} is COORDINATOR_REDIS_TIMEOUT_MS, already checked.
   */
  static RelayListener fromEnvironment(Map<String, String> env, boolean relayOnly, boolean hasRedis,
      int redisTimeoutMillis, List<String> warnings) {
    String rawPort = env.get("COORDINATOR_RELAY_PORT");
    if (rawPort == null || rawPort.isBlank()) {
      if (relayOnly) {
        throw new IllegalArgumentException("COORDINATOR_MODE=relay needs COORDINATOR_RELAY_PORT (0 for a free port)");
      }
      for (String v : VARIABLES.subList(2, VARIABLES.size())) {
        if (env.get(v) != null && !env.get(v).isBlank()) {
          throw new IllegalArgumentException(v + " is set but COORDINATOR_RELAY_PORT is not: set the port to run "
              + "the relay");
        }
      }
      return null;
    }
    if (relayOnly && !hasRedis) {
      // a relay drawing from a Redis of its own would share nothing with the fleet
      throw new IllegalArgumentException("COORDINATOR_MODE=relay needs REDIS_URL or REDIS_CLUSTER_NODES: the "
          + "Redis the fleet shares");
    }
    if (relayOnly) {
      for (String v : API_ONLY) {
        if (env.get(v) != null && !env.get(v).isBlank()) {
          warnings.add(v + " is ignored: COORDINATOR_MODE=relay serves no HTTP API");
        }
      }
    }
    int port = CoordinatorConfig.intVar(env, "COORDINATOR_RELAY_PORT", 0, 0, 65535);
    String host = env.get("COORDINATOR_RELAY_HOST");
    host = host == null || host.isBlank() ? DEFAULT_HOST : host.strip();
    if (!CoordinatorConfig.isHost(host)) {
      throw new IllegalArgumentException("COORDINATOR_RELAY_HOST must be a host name or an IP address, was '"
          + host + "'");
    }
    int max = CoordinatorConfig.intVar(env, "COORDINATOR_RELAY_MAX_CONNECTIONS", DEFAULT_MAX_CONNECTIONS, 1, 1_000_000);
    String password = env.get("COORDINATOR_RELAY_PASSWORD");
    if (password != null && password.isEmpty()) {
      password = null;
    }
    int clientCalls = CoordinatorConfig.intVar(env, "COORDINATOR_RELAY_CLIENT_CALLS", DEFAULT_CLIENT_CALLS, 10,
        10_000_000);
    return new RelayListener(host, port, max, password, redisTimeoutMillis, clientCalls);
  }

  /** Never the password. */
  @Override
  public String toString() {
    return "relay on " + host + ":" + port + " (at most " + maxConnections + " connections, "
        + clientCallsPerSecond + " client calls a second a budget" + (password == null ? "" : ", password required") + ")";
  }
}
