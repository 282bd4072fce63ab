package io.retrybudget.coordinator;

import io.retrybudget.coordinator.http.HttpLimits;
import io.lettuce.core.RedisURI;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * The coordinator's settings, read from the environment; every bad value is refused at start with
 * the name of the variable (and never with a password or token in the message).
 *
 * @param redisUrl REDIS_URL ({@code redis://}, {@code rediss://}, or {@code redis-sentinel://host:port[,host:port]#master}
 *     for a Redis that Sentinel manages; password allowed), or null
 * @param clusterNodes REDIS_CLUSTER_NODES (comma-separated host:port), or empty
 * @param port COORDINATOR_PORT (default 8080; 0 picks a free one)
 * @param token COORDINATOR_TOKEN, the bearer token every write needs (made at start when unset;
 *     surrounding whitespace trimmed; a known placeholder is refused)
 * @param tokenGenerated true when the token was made here and must be shown to the operator
 * @param budgetsFile COORDINATOR_BUDGETS_FILE, or null
 * @param maxBudgets COORDINATOR_MAX_BUDGETS: most budgets listed and exported as metric series
 * @param fileCheckMillis COORDINATOR_BUDGETS_FILE_CHECK_MS: how often to check that Redis still
 *     holds the file's budgets (default 5000)
 * @param autoCreate COORDINATOR_AUTO_CREATE: true lets a POST to a budget without configuration
 *     create it with the defaults; false (the default) answers 404 and creates nothing
 * @param http COORDINATOR_MAX_CONNECTIONS, the HTTP timeouts, COORDINATOR_PROBE_RESERVE,
 *     COORDINATOR_METRICS_CACHE_MS and COORDINATOR_MAX_CONNECTIONS_PER_IP
 * @param managementPort COORDINATOR_MANAGEMENT_PORT: the management listener's port, serving
 *     /health/live, /health/ready and /metrics on its own acceptor and event loop (default 9091;
 *     0 picks a free one, and is the default when COORDINATOR_PORT is 0); {@link #SHARED_PORT} when
 *     it is the value of COORDINATOR_PORT: no management listener, as before it existed (the API
 *     port serves these three in every case)
 * @param managementMaxConnections COORDINATOR_MANAGEMENT_MAX_CONNECTIONS: open connections on the
 *     management listener at most (default 64); its timeouts are the API's
 * @param livenessStallMillis COORDINATOR_LIVENESS_STALL_MS: the management listener's
 *     /health/live answers 503 when the API event loop has not run its heartbeat for this long
 *     (default 10000), so a stuck API loop still fails the probe
 * @param redisTimeoutMillis COORDINATOR_REDIS_TIMEOUT_MS: the most a Redis command is waited for
 *     before the request it serves is answered 503 (default 1000; raise it for a Redis far away)
 * @param relay the relay's listener ({@link RelayListener}: COORDINATOR_RELAY_PORT and its
 *     neighbours), or null when it is off
 * @param relayOnly COORDINATOR_MODE=relay: the relay alone, no HTTP API and no management listener
 * @param warnings what the operator should hear about at start (a trimmed token)
 */
public record CoordinatorConfig(
    String redisUrl,
    List<String> clusterNodes,
    int port,
    String token,
    boolean tokenGenerated,
    Path budgetsFile,
    int maxBudgets,
    int fileCheckMillis,
    boolean autoCreate,
    HttpLimits http,
    int managementPort,
    int managementMaxConnections,
    int livenessStallMillis,
    int redisTimeoutMillis,
    RelayListener relay,
    boolean relayOnly,
    List<String> warnings) {

  public static final int DEFAULT_PORT = 8080;
  public static final int DEFAULT_MANAGEMENT_PORT = 9091;
  /** {@link #managementPort()} when health and metrics are served on the API port only. */
  public static final int SHARED_PORT = -1;
  public static final int DEFAULT_MANAGEMENT_MAX_CONNECTIONS = 64;
  public static final int DEFAULT_LIVENESS_STALL_MS = 10_000;
  public static final int DEFAULT_REDIS_TIMEOUT_MS = 1_000;
  /** Every environment variable the coordinator reads. */
  public static final List<String> VARIABLES = List.of("REDIS_URL", "REDIS_CLUSTER_NODES", "COORDINATOR_PORT",
      "COORDINATOR_TOKEN", "COORDINATOR_BUDGETS_FILE", "COORDINATOR_BUDGETS_FILE_CHECK_MS", "COORDINATOR_MAX_BUDGETS",
      "COORDINATOR_AUTO_CREATE", "COORDINATOR_MAX_CONNECTIONS", "COORDINATOR_HEADER_TIMEOUT_MS",
      "COORDINATOR_BODY_TIMEOUT_MS", "COORDINATOR_IDLE_TIMEOUT_MS", "COORDINATOR_PROBE_RESERVE",
      "COORDINATOR_METRICS_CACHE_MS", "COORDINATOR_MAX_CONNECTIONS_PER_IP", "COORDINATOR_MANAGEMENT_PORT",
      "COORDINATOR_MANAGEMENT_MAX_CONNECTIONS", "COORDINATOR_LIVENESS_STALL_MS",
      "COORDINATOR_REDIS_TIMEOUT_MS", "COORDINATOR_MODE", "COORDINATOR_RELAY_PORT", "COORDINATOR_RELAY_HOST",
      "COORDINATOR_RELAY_MAX_CONNECTIONS", "COORDINATOR_RELAY_PASSWORD", "COORDINATOR_RELAY_CLIENT_CALLS");
  public static final int DEFAULT_MAX_BUDGETS = 1000;
  /** Shorter tokens are accepted with a warning at start. */
  public static final int MIN_TOKEN_LENGTH = 16;
  /** Tokens that are examples, not secrets: the placeholder the Kubernetes manifests once shipped and the usual ones. */
  static final Set<String> PLACEHOLDER_TOKENS = Set.of("replace-me-with-a-long-random-token", "replace-me",
      "changeme", "change-me", "token", "secret");
  private static final Pattern HOST = Pattern.compile("[A-Za-z0-9._-]+|[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*");

  public boolean hasRedis() {
    return redisUrl != null || !clusterNodes.isEmpty();
  }

  public static CoordinatorConfig fromEnvironment(Map<String, String> env) {
    List<String> warnings = new ArrayList<>();
    String redisUrl = blankToNull(env.get("REDIS_URL"));
    String nodes = blankToNull(env.get("REDIS_CLUSTER_NODES"));
    if (redisUrl != null && nodes != null) {
      throw new IllegalArgumentException("REDIS_URL and REDIS_CLUSTER_NODES are both set: set one");
    }
    if (redisUrl != null) {
      redisUrl = redisUrl.strip();
      parseRedisUrl(redisUrl);
    }
    List<String> clusterNodes = nodes == null ? List.of()
        : Arrays.stream(nodes.split(",")).map(String::trim).filter(s -> !s.isEmpty()).toList();
    int port = intVar(env, "COORDINATOR_PORT", DEFAULT_PORT, 0, 65535);
    int maxBudgets = intVar(env, "COORDINATOR_MAX_BUDGETS", DEFAULT_MAX_BUDGETS, 1, 100_000);
    int fileCheck = intVar(env, "COORDINATOR_BUDGETS_FILE_CHECK_MS", 5_000, 100, 3_600_000);
    HttpLimits http = new HttpLimits(
        intVar(env, "COORDINATOR_MAX_CONNECTIONS", HttpLimits.DEFAULT_MAX_CONNECTIONS, 1, 1_000_000),
        intVar(env, "COORDINATOR_HEADER_TIMEOUT_MS", HttpLimits.DEFAULT_HEADER_TIMEOUT_MS, 100, 3_600_000),
        intVar(env, "COORDINATOR_BODY_TIMEOUT_MS", HttpLimits.DEFAULT_BODY_TIMEOUT_MS, 100, 3_600_000),
        intVar(env, "COORDINATOR_IDLE_TIMEOUT_MS", HttpLimits.DEFAULT_IDLE_TIMEOUT_MS, 100, 3_600_000),
        intVar(env, "COORDINATOR_PROBE_RESERVE", HttpLimits.DEFAULT_PROBE_RESERVE, 0, 10_000),
        intVar(env, "COORDINATOR_METRICS_CACHE_MS", HttpLimits.DEFAULT_METRICS_CACHE_MS, 0, 60_000),
        intVar(env, "COORDINATOR_MAX_CONNECTIONS_PER_IP", HttpLimits.DEFAULT_MAX_CONNECTIONS_PER_IP, 0, 1_000_000));
    int managementPort = managementPort(env, port, warnings);
    int managementMax = intVar(env, "COORDINATOR_MANAGEMENT_MAX_CONNECTIONS", DEFAULT_MANAGEMENT_MAX_CONNECTIONS, 1,
        100_000);
    int stall = intVar(env, "COORDINATOR_LIVENESS_STALL_MS", DEFAULT_LIVENESS_STALL_MS, 100, 3_600_000);
    int redisTimeout = intVar(env, "COORDINATOR_REDIS_TIMEOUT_MS", DEFAULT_REDIS_TIMEOUT_MS, 10, 60_000);
    String rawToken = env.get("COORDINATOR_TOKEN");
    String token = blankToNull(rawToken) == null ? null : rawToken.strip();
    if (token != null && !token.equals(rawToken)) {
      warnings.add("COORDINATOR_TOKEN had whitespace around it (a trailing newline from a file or Secret?): "
          + "it was trimmed; clients send the token without it");
    }
    if (token != null && PLACEHOLDER_TOKENS.contains(token.toLowerCase(java.util.Locale.ROOT))) {
      throw new IllegalArgumentException("COORDINATOR_TOKEN is a placeholder, not a secret: set a random one, e.g. "
          + "COORDINATOR_TOKEN=$(openssl rand -hex 24), or in Kubernetes: kubectl -n retry-budget create secret generic "
          + "retry-budget-coordinator --from-literal=COORDINATOR_TOKEN=\"$(openssl rand -hex 24)\"");
    }
    if (token != null && token.chars().anyMatch(c -> c < 0x21 || c > 0x7e)) {
      throw new IllegalArgumentException("COORDINATOR_TOKEN must be printable ASCII without spaces (it is sent in "
          + "an HTTP header); its value is not shown");
    }
    if (token != null && token.length() < MIN_TOKEN_LENGTH) {
      // a warning, not a refusal: tests and local runs use short ones; its value is not shown
      warnings.add("COORDINATOR_TOKEN is " + token.length() + " characters long: anyone who guesses it can "
          + "change budgets and take permits; use at least " + MIN_TOKEN_LENGTH + " random ones, e.g. "
          + "COORDINATOR_TOKEN=$(openssl rand -hex 24)");
    }
    boolean generated = token == null;
    if (generated) {
      byte[] bytes = new byte[24];
      new SecureRandom().nextBytes(bytes);
      token = HexFormat.of().formatHex(bytes);
    }
    String file = blankToNull(env.get("COORDINATOR_BUDGETS_FILE"));
    String auto = blankToNull(env.get("COORDINATOR_AUTO_CREATE"));
    if (auto != null && !auto.trim().equals("true") && !auto.trim().equals("false")) {
      throw new IllegalArgumentException("COORDINATOR_AUTO_CREATE must be true or false, was '" + auto + "'");
    }
    boolean relayOnly = RelayListener.relayOnly(env);
    RelayListener relay = RelayListener.fromEnvironment(env, relayOnly, redisUrl != null || !clusterNodes.isEmpty(),
        redisTimeout, warnings);
    return new CoordinatorConfig(redisUrl, clusterNodes, port, token, generated, file == null ? null : Path.of(file),
        maxBudgets, fileCheck, auto != null && auto.trim().equals("true"), http, managementPort, managementMax, stall,
        redisTimeout, relay, relayOnly, List.copyOf(warnings));
  }

  /** {@link #redisTimeoutMillis()} as a duration. */
  public java.time.Duration redisTimeout() {
    return java.time.Duration.ofMillis(redisTimeoutMillis);
  }

  /** True when /health/* and /metrics have a listener of their own. */
  public boolean hasManagementListener() {
    return managementPort != SHARED_PORT;
  }

  private static int managementPort(Map<String, String> env, int apiPort, List<String> warnings) {
    if (blankToNull(env.get("COORDINATOR_MANAGEMENT_PORT")) == null) {
      if (apiPort == 0) {
        return 0; // tests and anyone who asks for a free API port get a free management port too
      }
      if (apiPort == DEFAULT_MANAGEMENT_PORT) {
        warnings.add("COORDINATOR_PORT is " + apiPort + ", the default of COORDINATOR_MANAGEMENT_PORT: health and "
            + "metrics are served on that port only; set COORDINATOR_MANAGEMENT_PORT to give them their own");
        return SHARED_PORT;
      }
      return DEFAULT_MANAGEMENT_PORT;
    }
    int port = intVar(env, "COORDINATOR_MANAGEMENT_PORT", DEFAULT_MANAGEMENT_PORT, 0, 65535);
    return port != 0 && port == apiPort ? SHARED_PORT : port;
  }

  /** Parsed the way the Redis client parses it; the message never holds the URL (it may hold a password). */
  static RedisURI parseRedisUrl(String url) {
    String refusal = "REDIS_URL is not a valid redis:// or rediss:// URL (its value is not shown: it may hold a "
        + "password); write redis://[:password@]host:port with /, @, : and % in the password percent-encoded "
        + "(%2F, %40, %3A, %25)";
    if (isSentinel(url)) {
      try {
        return io.retrybudget.budget.redis.transport.RedisConnectionOptions.standalone(url).build().uris().get(0);
      } catch (IllegalArgumentException e) {
        // the SDK's message names the value "redisUri" and masks any password
        throw new IllegalArgumentException("REDIS_URL" + e.getMessage().substring("redisUri".length()));
      }
    }
    if (!(url.startsWith("redis://") || url.startsWith("rediss://"))) {
      throw new IllegalArgumentException("REDIS_URL must start with redis://, rediss:// or redis-sentinel://");
    }
    RedisURI uri;
    try {
      uri = RedisURI.create(url);
    } catch (RuntimeException e) {
      throw new IllegalArgumentException(refusal);
    }
    String host = uri.getHost();
    if (host == null || host.isEmpty() || !HOST.matcher(host).matches() || uri.getPort() < 1 || uri.getPort() > 65535) {
      throw new IllegalArgumentException(refusal);
    }
    return uri;
  }

  static boolean isHost(String host) {
    return HOST.matcher(host).matches();
  }

  /**
   * How the coordinator connects to Redis: REDIS_URL or REDIS_CLUSTER_NODES with
   * COORDINATOR_REDIS_TIMEOUT_MS; only when {@link #hasRedis()}.
   */
  public io.retrybudget.budget.redis.transport.RedisConnectionOptions redisOptions() {
    return redisUrl != null
        ? io.retrybudget.budget.redis.transport.RedisConnectionOptions.standalone(redisUrl).commandTimeout(redisTimeout()).build()
        : io.retrybudget.budget.redis.transport.RedisConnectionOptions.cluster(clusterNodes).commandTimeout(redisTimeout()).build();
  }

  static int intVar(Map<String, String> env, String name, int defaultValue, int min, int max) {
    String raw = blankToNull(env.get(name));
    if (raw == null) {
      return defaultValue;
    }
    try {
      int v = Integer.parseInt(raw.trim());
      if (v < min || v > max) {
        throw new NumberFormatException();
      }
      return v;
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(name + " must be an integer in [" + min + ", " + max + "], was '" + raw + "'");
    }
  }

  private static String blankToNull(String s) {
    return s == null || s.isBlank() ? null : s;
  }

  private static boolean isSentinel(String url) {
    return url.startsWith("redis-sentinel://") || url.startsWith("rediss-sentinel://");
  }

  /** Where Redis is, for errors and logs: host:port (the Sentinels and the master's name) only, never a password. */
  public String redisEndpoint() {
    if (redisUrl != null && isSentinel(redisUrl)) {
      return io.retrybudget.budget.redis.transport.RedisConnectionOptions.standalone(redisUrl).build().toString();
    }
    if (redisUrl != null) {
      RedisURI u = parseRedisUrl(redisUrl);
      return u.getHost() + ":" + u.getPort();
    }
    return clusterNodes.isEmpty() ? "local" : "cluster " + String.join(",", clusterNodes);
  }

  /** For logs: never the token, never a password in the URL. */
  public String describeRedis() {
    if (redisUrl != null && isSentinel(redisUrl)) {
      return redisEndpoint();
    }
    if (redisUrl != null) {
      RedisURI u = parseRedisUrl(redisUrl);
      boolean secret = redisUrl.contains("@");
      return (u.isSsl() ? "rediss://" : "redis://") + (secret ? "***@" : "") + u.getHost() + ":" + u.getPort()
          + (u.getDatabase() != 0 ? "/" + u.getDatabase() : "");
    }
    return clusterNodes.isEmpty() ? "local" : "cluster " + String.join(",", clusterNodes);
  }
}
