package io.retrybudget.deploy.demo;

import com.sun.net.httpserver.HttpServer;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.BudgetMode;
import io.retrybudget.budget.RedisBudgetClient;
import io.retrybudget.budget.RetryBudget;
import io.retrybudget.budget.redis.transport.RedisConnectionOptions;
import io.retrybudget.micrometer.MicrometerBudgetMetrics;
import io.retrybudget.micrometer.MicrometerRetryMetrics;
import io.retrybudget.retry.RetryExecutor;
import io.retrybudget.retry.RetryPolicy;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * The Compose demo: a service that calls two flaky dependencies through the SDK, so that every
 * panel of the dashboard has data and the alerts have something to fire on. It exposes its
 * Micrometer registry at {@code /metrics} (Prometheus text) for the {@code retry-budget-clients}
 * scrape job.
 *
 * <ul>
 *   <li>budget {@code payments-api} (enforce): its dependency is healthy (2 % failures) for
 *       {@code healthySeconds}, then down (every call fails) for {@code outageSeconds}, over and
 *       over; in the outage the budget is exhausted and retries are denied.
 *   <li>budget {@code search} (shadow): 20 % failures all the time; retries are granted and what
 *       the budget would deny is counted.
 * </ul>
 *
 * One thread per budget makes the calls ({@code callsPerSecond} each, no more in flight than one
 * per thread); one thread answers scrapes.
 */
public final class LoadDemo implements AutoCloseable {
  static final String PAYMENTS = "payments-api";
  static final String SEARCH = "search";
  /** The environment variables {@link Settings#fromEnvironment} reads. */
  public static final java.util.Set<String> VARIABLES = java.util.Set.of("REDIS_URL", "DEMO_HOST", "DEMO_PORT",
      "DEMO_CALLS_PER_SECOND", "DEMO_HEALTHY_SECONDS", "DEMO_OUTAGE_SECONDS");

  /** Validated settings; {@link #fromEnvironment} names the variable that is wrong. */
  public record Settings(String redisUrl, String host, int port, int callsPerSecond, int healthySeconds,
      int outageSeconds, String paymentsBudget) {
    public Settings {
      if (redisUrl == null || redisUrl.isBlank()) {
        throw new IllegalArgumentException("REDIS_URL must not be empty");
      }
      if (port < 0 || port > 65535) {
        throw new IllegalArgumentException("DEMO_PORT must be in [0, 65535], was " + port);
      }
      if (callsPerSecond < 1 || callsPerSecond > 1000) {
        throw new IllegalArgumentException("DEMO_CALLS_PER_SECOND must be in [1, 1000], was " + callsPerSecond);
      }
      if (healthySeconds < 0 || healthySeconds > 86_400) {
        throw new IllegalArgumentException("DEMO_HEALTHY_SECONDS must be in [0, 86400], was " + healthySeconds);
      }
      if (outageSeconds < 0 || outageSeconds > 86_400 || healthySeconds + outageSeconds == 0) {
        throw new IllegalArgumentException("DEMO_OUTAGE_SECONDS must be in [0, 86400] and not 0 with "
            + "DEMO_HEALTHY_SECONDS 0, was " + outageSeconds);
      }
    }

    /**
     * {@code REDIS_URL} (default redis://localhost:6379), {@code DEMO_HOST} (0.0.0.0),
     * {@code DEMO_PORT} (9464), {@code DEMO_CALLS_PER_SECOND} (50 per budget),
     * {@code DEMO_HEALTHY_SECONDS} (240), {@code DEMO_OUTAGE_SECONDS} (360: long enough for
     * RetryBudgetExhausted, 1 min + {@code for: 4m}, to fire).
     */
    public static Settings fromEnvironment(Map<String, String> env) {
      return new Settings(env.getOrDefault("REDIS_URL", "redis://localhost:6379"), env.getOrDefault("DEMO_HOST", "0.0.0.0"),
          integer(env, "DEMO_PORT", 9464), integer(env, "DEMO_CALLS_PER_SECOND", 50),
          integer(env, "DEMO_HEALTHY_SECONDS", 240), integer(env, "DEMO_OUTAGE_SECONDS", 360), PAYMENTS);
    }

    private static int integer(Map<String, String> env, String name, int otherwise) {
      String v = env.get(name);
      if (v == null || v.isBlank()) {
        return otherwise;
      }
      try {
        return Integer.parseInt(v.strip());
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException(name + " must be an integer, was '" + v + "'");
      }
    }
  }

  /** Whether the payments dependency is down {@code elapsedMillis} after the start: healthy first, then down, repeated. */
  static boolean inOutage(long elapsedMillis, int healthySeconds, int outageSeconds) {
    long cycle = (healthySeconds + (long) outageSeconds) * 1000;
    return Math.floorMod(elapsedMillis, cycle) >= healthySeconds * 1000L;
  }

  private final Settings settings;
  private final LongSupplier millis;
  private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
  private final RedisBudgetClient budgets;
  private final List<RetryExecutor> executors = new ArrayList<>();
  private final List<ScheduledExecutorService> traffic = new ArrayList<>();
  private final ExecutorService scrapes = Executors.newSingleThreadExecutor(daemon("demo-metrics"));
  private final HttpServer server;
  private final RetryExecutor payments;
  private final RetryExecutor search;
  private final long startedAt; // the phases count from here

  public LoadDemo(Settings settings) throws IOException {
    this(settings, System::currentTimeMillis);
  }

  LoadDemo(Settings settings, LongSupplier millis) throws IOException {
    this.settings = settings;
    this.millis = millis;
    this.startedAt = millis.getAsLong();
    budgets = RedisBudgetClient.builder(RedisConnectionOptions.standalone(settings.redisUrl()).build()).build();
    try {
      payments = executor(BudgetConfig.builder(settings.paymentsBudget()).build());
      search = executor(BudgetConfig.builder(SEARCH).mode(BudgetMode.SHADOW).build());
      server = HttpServer.create(new InetSocketAddress(settings.host(), settings.port()), 16);
      server.createContext("/", exchange -> {
        try (exchange) {
          boolean get = "GET".equals(exchange.getRequestMethod()) || "HEAD".equals(exchange.getRequestMethod());
          if (!"/metrics".equals(exchange.getRequestURI().getPath()) || !get) {
            exchange.sendResponseHeaders(get ? 404 : 405, -1);
            return;
          }
          byte[] body = registry.scrape().getBytes(StandardCharsets.UTF_8);
          exchange.getResponseHeaders().add("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
          if ("HEAD".equals(exchange.getRequestMethod())) {
            exchange.sendResponseHeaders(200, -1);
            return;
          }
          exchange.sendResponseHeaders(200, body.length);
          try (OutputStream out = exchange.getResponseBody()) {
            out.write(body);
          }
        }
      });
      server.setExecutor(scrapes);
      server.start();
    } catch (IOException | RuntimeException e) {
      close();
      throw e;
    }
  }

  private RetryExecutor executor(BudgetConfig config) {
    RetryBudget budget = budgets.budget(config);
    MicrometerBudgetMetrics.monitor(registry, budget);
    RetryExecutor e = RetryExecutor.builder(RetryPolicy.builder().maxAttempts(3)
            .backoff(Duration.ofMillis(5), Duration.ofMillis(50)).build())
        .budget(budget).listener(new MicrometerRetryMetrics(registry, config.name())).build();
    executors.add(e);
    return e;
  }

  /** The port {@code /metrics} listens on. */
  public int port() {
    return server.getAddress().getPort();
  }

  /** Starts the calls: {@code callsPerSecond} a second for each budget, until {@link #close}. */
  public synchronized void start() {
    if (!traffic.isEmpty()) {
      throw new IllegalStateException("already started");
    }
    long periodMicros = 1_000_000L / settings.callsPerSecond();
    for (String name : List.of(settings.paymentsBudget(), SEARCH)) {
      ScheduledExecutorService s = Executors.newSingleThreadScheduledExecutor(daemon("demo-" + name));
      traffic.add(s);
      s.scheduleAtFixedRate(name.equals(SEARCH) ? this::callSearch : this::callPayments, 0, periodMicros,
          TimeUnit.MICROSECONDS);
    }
  }

  /** One call to the payments dependency (down in the outage phase), through the SDK. */
  void callPayments() {
    boolean down = inOutage(millis.getAsLong() - startedAt, settings.healthySeconds(), settings.outageSeconds());
    call(payments, down ? 1.0 : 0.02);
  }

  /** One call to the search dependency (20 % failures), through the SDK. */
  void callSearch() {
    call(search, 0.2);
  }

  private static void call(RetryExecutor executor, double failure) {
    try {
      executor.call(() -> {
        if (ThreadLocalRandom.current().nextDouble() < failure) {
          throw new IOException("dependency failed (demo)");
        }
        return "ok";
      });
    } catch (Exception expected) {
      // failed calls are the point of the demo: the metrics count them
    }
  }

  private static java.util.concurrent.ThreadFactory daemon(String name) {
    return r -> {
      Thread t = new Thread(r, name);
      t.setDaemon(true);
      return t;
    };
  }

  @Override
  public synchronized void close() {
    for (ScheduledExecutorService s : traffic) {
      s.shutdownNow();
    }
    for (ScheduledExecutorService s : traffic) {
      try {
        s.awaitTermination(5, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    if (server != null) {
      server.stop(0);
    }
    scrapes.shutdownNow();
    executors.forEach(RetryExecutor::close);
    budgets.close();
  }

  /** {@code java -jar load-demo.jar}: settings from the environment (see {@link Settings#fromEnvironment}). */
  public static void main(String[] args) throws Exception {
    Settings settings;
    try {
      settings = Settings.fromEnvironment(System.getenv());
    } catch (IllegalArgumentException e) {
      System.err.println("load demo: " + e.getMessage());
      System.exit(2);
      return;
    }
    LoadDemo demo = new LoadDemo(settings);
    Runtime.getRuntime().addShutdownHook(new Thread(demo::close, "demo-shutdown"));
    demo.start();
    System.out.println("load demo: " + settings.callsPerSecond() + " calls/s to each of " + settings.paymentsBudget()
        + " (down " + settings.outageSeconds() + " s after every " + settings.healthySeconds() + " s) and " + SEARCH
        + " (shadow, 20 % failures); metrics on http://" + settings.host() + ":" + demo.port() + "/metrics");
    Thread.currentThread().join();
  }
}
