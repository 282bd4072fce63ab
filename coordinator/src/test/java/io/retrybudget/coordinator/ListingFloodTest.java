package io.retrybudget.coordinator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.redis.protocol.BudgetScripts;
import io.retrybudget.budget.redis.protocol.ConfigChange;
import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import io.retrybudget.testing.RedisExtension;
import io.vertx.core.json.JsonObject;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Unauthenticated listings of 1,000 budgets, many at once, on a real Redis. They must not fill the
 * shared Redis connection's queue: authenticated permits and the readiness PING keep their answers,
 * and the listings themselves succeed. A full queue refuses a command at once, however fast the
 * machine; a command that waits in the queue is slow, not refused, and how slow depends on the
 * machine's load: so the coordinator's Redis timeout here is far beyond any wait in the queue (see
 * {@link #REDIS_TIMEOUT_MS}), and a refusal means the queue was full.
 */
class ListingFloodTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();
  static final String TOKEN = "listing-flood-test-token";
  static final int BUDGETS = 1_000;
  static final int LISTERS = 8;
  /**
   * COORDINATOR_REDIS_TIMEOUT_MS. A permit or PING waits behind at most 32 status calls of a
   * listing, microseconds of Redis each: milliseconds, and at a load of 16 on 2 cores (an eighth of
   * a core for Redis, for Lettuce's thread and for the event loop) well under a second. The default
   * 1 s was within reach of such a load and answered 503 for a command that was merely slow.
   */
  static final String REDIS_TIMEOUT_MS = "30000";
  /**
   * An HTTP exchange's timeout: nothing is measured against it, it only ends a test that hangs. The
   * listers keep the coordinator busy on purpose (a listing of 1,000 budgets is 1,000 status calls
   * and a JSON body of them for each lister it answers), and a permit or probe waits its turn on
   * the event loop: a second at most on an idle machine, over 10 s at a load of 25 with this
   * process given a small slice of a core. The claim is that it is answered, not refused.
   */
  static final Duration EXCHANGE = Duration.ofSeconds(60);

  @Test
  void aFloodOfListingsDeniesNoPermitAndNoProbe() throws Exception {
    try (RedisBudgetStore store = RedisBudgetStore.connect(redis.connectionOptions().build())) {
      BudgetScripts scripts = new BudgetScripts(store);
      List<CompletableFuture<?>> seeded = new ArrayList<>();
      for (int i = 0; i < BUDGETS; i++) {
        String name = String.format("load-%04d", i);
        seeded.add(scripts.configure(name, new ConfigChange(100_000L, 10, 10, null), BudgetConfig.builder(name).build()));
        if (seeded.size() == 200) {
          CompletableFuture.allOf(seeded.toArray(new CompletableFuture<?>[0])).get(30, TimeUnit.SECONDS);
          seeded.clear();
        }
      }
      CompletableFuture.allOf(seeded.toArray(new CompletableFuture<?>[0])).get(30, TimeUnit.SECONDS);
    }
    try (Coordinator c = Coordinator.start(CoordinatorConfig.fromEnvironment(Map.of("REDIS_URL", redis.uri(),
            "COORDINATOR_PORT", "0", "COORDINATOR_MANAGEMENT_PORT", "0", "COORDINATOR_TOKEN", TOKEN,
            "COORDINATOR_REDIS_TIMEOUT_MS", REDIS_TIMEOUT_MS)));
        ApiClient api = new ApiClient(c.port(), TOKEN)) {
      assertEquals(200, api.write("configureBudget", "PUT", "/v1/budgets/victim",
          "{\"ratio\": 0.5, \"min_retries_per_second\": 1000000}").status());
      HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
      HttpRequest listing = HttpRequest.newBuilder(URI.create(api.base() + "/v1/budgets"))
          .timeout(EXCHANGE).build();
      AtomicBoolean stop = new AtomicBoolean();
      AtomicInteger listings = new AtomicInteger();
      ConcurrentLinkedQueue<String> listingFailures = new ConcurrentLinkedQueue<>();
      List<Thread> listers = new ArrayList<>();
      for (int i = 0; i < LISTERS; i++) {
        Thread t = new Thread(() -> {
          while (!stop.get()) {
            try {
              HttpResponse<String> r = http.send(listing, HttpResponse.BodyHandlers.ofString());
              if (r.statusCode() != 200) {
                listingFailures.add(r.statusCode() + " " + r.body());
              } else {
                listings.incrementAndGet();
              }
            } catch (Exception e) {
              listingFailures.add(e.toString());
            }
          }
        }, "lister-" + i);
        t.setDaemon(true);
        t.start();
        listers.add(t);
      }
      List<String> refused = new ArrayList<>();
      int permits = 0;
      try {
        for (int round = 0; round < 20; round++) {
          for (int i = 0; i < 10; i++) {
            ApiClient.Response r = api.writeWithin("acquireRetries", "POST", "/v1/budgets/victim/retries",
                "{\"count\": 1}", EXCHANGE);
            if (r.status() == 200) {
              permits++;
            } else {
              refused.add(r.status() + " " + r.body());
            }
          }
          HttpResponse<String> ready = http.send(HttpRequest.newBuilder(
              URI.create("http://127.0.0.1:" + c.managementPort() + "/health/ready")).timeout(EXCHANGE).build(),
              HttpResponse.BodyHandlers.ofString());
          if (ready.statusCode() != 200) {
            refused.add("ready " + ready.statusCode() + " " + ready.body());
          }
        }
      } finally {
        stop.set(true);
        for (Thread t : listers) {
          t.join(2 * EXCHANGE.toMillis()); // its listing in flight ends within EXCHANGE
        }
      }
      System.out.println("during " + listings.get() + " listings of " + BUDGETS + " budgets by " + LISTERS
          + " clients: " + permits + " permits granted, " + refused.size() + " refused");
      assertTrue(refused.isEmpty(), () -> refused.size() + " permits or probes refused, e.g. " + refused.get(0));
      assertTrue(listingFailures.isEmpty(), () -> listingFailures.size() + " listings failed, e.g. " + listingFailures.peek());
      assertTrue(listings.get() >= LISTERS, "listings answered: " + listings.get());
      JsonObject full = api.send("listBudgets", HttpRequest.newBuilder(URI.create(api.base() + "/v1/budgets")).GET(),
          EXCHANGE).json();
      assertEquals(BUDGETS, full.getJsonArray("budgets").size(), "every budget but the victim: the limit is 1,000");
    }
  }
}
