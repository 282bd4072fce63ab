package io.retrybudget.coordinator;

import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

/**
 * The coordinator's settings, read from the environment; every bad value is refused at start with
 * the name of the variable.
 *
 * @param redisUrl REDIS_URL ({@code redis://} or {@code rediss://}, password allowed), or null
 * @param clusterNodes REDIS_CLUSTER_NODES (comma-separated host:port), or empty
 * @param port COORDINATOR_PORT (default 8080; 0 picks a free one)
 * @param token COORDINATOR_TOKEN, the bearer token every write needs (made at start when unset)
 * @param tokenGenerated true when the token was made here and must be shown to the operator
 * @param budgetsFile COORDINATOR_BUDGETS_FILE, or null
 * @param maxBudgets COORDINATOR_MAX_BUDGETS: most budgets listed and exported as metric series
 * @param fileCheckMillis COORDINATOR_BUDGETS_FILE_CHECK_MS: how often to check that Redis still
 *     holds the file's budgets (default 10000)
 * @param autoCreate COORDINATOR_AUTO_CREATE: true lets a POST to a budget without configuration
 *     create it with the defaults; false (the default) answers 404 and creates nothing
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
    boolean autoCreate) {

  public static final int DEFAULT_PORT = 8080;
  /** Every environment variable the coordinator reads. */
  public static final List<String> VARIABLES = List.of("REDIS_URL", "REDIS_CLUSTER_NODES", "COORDINATOR_PORT",
      "COORDINATOR_TOKEN", "COORDINATOR_BUDGETS_FILE", "COORDINATOR_BUDGETS_FILE_CHECK_MS", "COORDINATOR_MAX_BUDGETS",
      "COORDINATOR_AUTO_CREATE");
  public static final int DEFAULT_MAX_BUDGETS = 1000;

  public boolean hasRedis() {
    return redisUrl != null || !clusterNodes.isEmpty();
  }

  public static CoordinatorConfig fromEnvironment(Map<String, String> env) {
    String redisUrl = blankToNull(env.get("REDIS_URL"));
    String nodes = blankToNull(env.get("REDIS_CLUSTER_NODES"));
    if (redisUrl != null && nodes != null) {
      throw new IllegalArgumentException("REDIS_URL and REDIS_CLUSTER_NODES are both set: set one");
    }
    if (redisUrl != null && !(redisUrl.startsWith("redis://") || redisUrl.startsWith("rediss://"))) {
      throw new IllegalArgumentException("REDIS_URL must start with redis:// or rediss://");
    }
    List<String> clusterNodes = nodes == null ? List.of()
        : Arrays.stream(nodes.split(",")).map(String::trim).filter(s -> !s.isEmpty()).toList();
    int port = intVar(env, "COORDINATOR_PORT", DEFAULT_PORT, 0, 65535);
    int maxBudgets = intVar(env, "COORDINATOR_MAX_BUDGETS", DEFAULT_MAX_BUDGETS, 1, 100_000);
    int fileCheck = intVar(env, "COORDINATOR_BUDGETS_FILE_CHECK_MS", 10_000, 100, 3_600_000);
    String token = blankToNull(env.get("COORDINATOR_TOKEN"));
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
    return new CoordinatorConfig(redisUrl, clusterNodes, port, token, generated, file == null ? null : Path.of(file),
        maxBudgets, fileCheck, auto != null && auto.trim().equals("true"));
  }

  private static int intVar(Map<String, String> env, String name, int defaultValue, int min, int max) {
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

  /** For logs: never the token, never a password in the URL. */
  public String describeRedis() {
    if (redisUrl != null) {
      return redisUrl.replaceAll("//[^@/]*@", "//***@");
    }
    return clusterNodes.isEmpty() ? "local" : "cluster " + String.join(",", clusterNodes);
  }
}
