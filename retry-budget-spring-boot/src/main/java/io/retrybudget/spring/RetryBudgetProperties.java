package io.retrybudget.spring;

import io.retrybudget.budget.BudgetMode;
import io.retrybudget.budget.FallbackPolicy;
import io.retrybudget.retry.Jitter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * {@code retrybudget.*}: the Redis that holds the fleet's budgets, the budgets by name, and the
 * retry policies of HTTP clients by client name. Values are checked when the beans are made, by
 * the SDK's own builders; an error names the property.
 */
@ConfigurationProperties(prefix = "retrybudget")
public class RetryBudgetProperties {
  /** Whether the retry budget auto-configuration is active. */
  private boolean enabled = true;

  private final Redis redis = new Redis();

  /** Hard limit on one permit request to Redis, enforced by the client (at most 5s). */
  private Duration callTimeout = Duration.ofMillis(20);

  /** How often first attempts counted locally are sent to Redis (10ms to 1s). */
  private Duration flushInterval = Duration.ofMillis(500);

  /** How long an "exhausted" answer is reused locally before Redis is asked again (at most 10s). */
  private Duration exhaustedCacheTime = Duration.ofMillis(100);

  /** How budgets decide while Redis is unreachable. */
  private FallbackPolicy fallback = FallbackPolicy.LOCAL;

  /** Budgets by name (the dependency each protects, e.g. payments-api). */
  private Map<String, Budget> budgets = new LinkedHashMap<>();

  /** Retry policies of HTTP clients by client name, each paid for by one budget. */
  private Map<String, Client> clients = new LinkedHashMap<>();

  /**
   * The budget that pays for the retries of Spring's {@code @Retryable} methods that name none
   * with {@code @FleetBudget} (a name under retrybudget.budgets); unset: such methods retry as
   * Spring alone says.
   */
  private String retryableBudget;

  /**
   * The client (under retrybudget.clients) whose retry interceptor every RestClient.Builder that
   * Spring Boot hands out gets, through a RestClientCustomizer; unset: none. A RestClient or
   * RestTemplate bean named in a client's beans gets that client's interceptor instead.
   */
  private String defaultClient;

  public boolean isEnabled() {
    return enabled;
  }

  public void setEnabled(boolean enabled) {
    this.enabled = enabled;
  }

  public Redis getRedis() {
    return redis;
  }

  public Duration getCallTimeout() {
    return callTimeout;
  }

  public void setCallTimeout(Duration callTimeout) {
    this.callTimeout = callTimeout;
  }

  public Duration getFlushInterval() {
    return flushInterval;
  }

  public void setFlushInterval(Duration flushInterval) {
    this.flushInterval = flushInterval;
  }

  public Duration getExhaustedCacheTime() {
    return exhaustedCacheTime;
  }

  public void setExhaustedCacheTime(Duration exhaustedCacheTime) {
    this.exhaustedCacheTime = exhaustedCacheTime;
  }

  public FallbackPolicy getFallback() {
    return fallback;
  }

  public void setFallback(FallbackPolicy fallback) {
    this.fallback = fallback;
  }

  public Map<String, Budget> getBudgets() {
    return budgets;
  }

  public void setBudgets(Map<String, Budget> budgets) {
    this.budgets = budgets;
  }

  public Map<String, Client> getClients() {
    return clients;
  }

  public void setClients(Map<String, Client> clients) {
    this.clients = clients;
  }

  public String getRetryableBudget() {
    return retryableBudget;
  }

  public void setRetryableBudget(String retryableBudget) {
    this.retryableBudget = retryableBudget;
  }

  public String getDefaultClient() {
    return defaultClient;
  }

  public void setDefaultClient(String defaultClient) {
    this.defaultClient = defaultClient;
  }

  /**
   * Where the budgets live: one standalone Redis (or one Redis Sentinel manages), or a Redis Cluster.
   * When neither uri nor cluster-nodes is set, the application's own Redis (its
   * LettuceConnectionFactory, from spring.data.redis.*) is used, else redis://localhost:6379.
   */
  public static class Redis {
    static final String DEFAULT_URI = "redis://localhost:6379";

    /**
     * Redis URI: redis://, rediss:// or redis-sentinel://...#master (ignored when cluster-nodes is
     * set). Unset: the application's Redis, else redis://localhost:6379.
     */
    private String uri;

    /** Redis Cluster seed nodes as host:port; when set, the client runs in Cluster mode. */
    private List<String> clusterNodes = new ArrayList<>();

    public String getUri() {
      return uri;
    }

    public void setUri(String uri) {
      this.uri = uri;
    }

    public List<String> getClusterNodes() {
      return clusterNodes;
    }

    public void setClusterNodes(List<String> clusterNodes) {
      this.clusterNodes = clusterNodes;
    }
  }

  /**
   * One budget's values, used to seed Redis when it has no configuration for the budget yet
   * (Redis's configuration is authoritative once there).
   */
  public static class Budget {
    /** Share of first attempts that may be retried, in (0, 1]. */
    private double ratio = 0.10;

    /** Retries per second allowed whatever the request rate: a floor for the whole fleet. */
    private int minRetriesPerSecond = 10;

    /** Length of the sliding window, in seconds. */
    private int windowSeconds = 10;

    /** enforce (deny when exhausted) or shadow (count "would deny", never deny). */
    private BudgetMode mode = BudgetMode.ENFORCE;

    public double getRatio() {
      return ratio;
    }

    public void setRatio(double ratio) {
      this.ratio = ratio;
    }

    public int getMinRetriesPerSecond() {
      return minRetriesPerSecond;
    }

    public void setMinRetriesPerSecond(int minRetriesPerSecond) {
      this.minRetriesPerSecond = minRetriesPerSecond;
    }

    public int getWindowSeconds() {
      return windowSeconds;
    }

    public void setWindowSeconds(int windowSeconds) {
      this.windowSeconds = windowSeconds;
    }

    public BudgetMode getMode() {
      return mode;
    }

    public void setMode(BudgetMode mode) {
      this.mode = mode;
    }
  }

  /** An HTTP client's retry policy. */
  public static class Client {
    /** Name of the budget (under retrybudget.budgets) that pays for this client's retries. */
    private String budget;

    /** Every attempt of a call, the first included. */
    private int maxAttempts = 3;

    /** Base of the capped exponential backoff. */
    private Duration backoffBase = Duration.ofMillis(100);

    /** Cap of the backoff. */
    private Duration backoffCap = Duration.ofSeconds(5);

    /** Jitter applied to the backoff. */
    private Jitter jitter = Jitter.FULL;

    /** Limit on the whole call, every attempt and wait included (none when unset). */
    private Duration deadline;

    /** Whether POST and PATCH are retried with an Idempotency-Key made for the call; false: only with the caller's own. */
    private boolean idempotencyKeys = true;

    /**
     * Names of the application's RestClient, RestTemplate or RestClient.Builder beans that get this
     * client's retry interceptor (in place of any other client's), without wiring by hand.
     */
    private List<String> beans = new ArrayList<>();

    public List<String> getBeans() {
      return beans;
    }

    public void setBeans(List<String> beans) {
      this.beans = beans;
    }

    public String getBudget() {
      return budget;
    }

    public void setBudget(String budget) {
      this.budget = budget;
    }

    public int getMaxAttempts() {
      return maxAttempts;
    }

    public void setMaxAttempts(int maxAttempts) {
      this.maxAttempts = maxAttempts;
    }

    public Duration getBackoffBase() {
      return backoffBase;
    }

    public void setBackoffBase(Duration backoffBase) {
      this.backoffBase = backoffBase;
    }

    public Duration getBackoffCap() {
      return backoffCap;
    }

    public void setBackoffCap(Duration backoffCap) {
      this.backoffCap = backoffCap;
    }

    public Jitter getJitter() {
      return jitter;
    }

    public void setJitter(Jitter jitter) {
      this.jitter = jitter;
    }

    public Duration getDeadline() {
      return deadline;
    }

    public void setDeadline(Duration deadline) {
      this.deadline = deadline;
    }

    public boolean isIdempotencyKeys() {
      return idempotencyKeys;
    }

    public void setIdempotencyKeys(boolean idempotencyKeys) {
      this.idempotencyKeys = idempotencyKeys;
    }
  }
}
