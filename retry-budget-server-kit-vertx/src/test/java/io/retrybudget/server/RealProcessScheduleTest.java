package io.retrybudget.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import io.retrybudget.server.vertx.VertxIdempotency;
import io.retrybudget.testing.Eventually;
import io.retrybudget.testing.RedisExtension;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.handler.BodyHandler;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The exactly-once promises with real processes: two Vert.x replicas (each its own guard) over one
 * real {@code redis-server}, seeded random duplicates, handlers around {@code handlerTimeout} that
 * fail after their side effect, clients that disconnect while their handler runs, Redis paused
 * (SIGSTOP / SIGCONT) or killed and restarted empty. On
 * real time, so few schedules (the fake-time checker runs 10,000); the lease (1 s, renewed every
 * 333 ms) leaves a renewal 600 ms of lateness before it lapses, far above scheduling delays at load 16.
 */
class RealProcessScheduleTest {
  @RegisterExtension
  static final RedisExtension redis = RedisExtension.standalone();

  private static final int SCHEDULES = 5;

  record Effect(String key, long fence) {}

  record Answer(String key, int status, String body, boolean replayed) {}

  @Test
  void seededSchedulesWithRedisPausedAndRestartedKeepEveryPromise() throws Exception {
    int mostEffects = 0;
    List<String> violations = new ArrayList<>();
    for (long seed = 0; seed < SCHEDULES; seed++) {
      mostEffects = Math.max(mostEffects, schedule(seed, violations));
    }
    System.out.println("RealProcessScheduleTest: " + SCHEDULES + " schedules, most side effects for one key " + mostEffects
        + ", violations " + violations.size() + " " + violations);
    assertEquals(List.of(), violations);
  }

  private int schedule(long seed, List<String> violations) throws Exception {
    Random rnd = new Random(seed);
    List<Effect> effects = new CopyOnWriteArrayList<>();
    List<Answer> answers = new CopyOnWriteArrayList<>();
    IdempotencyConfig config = IdempotencyConfig.builder().handlerTimeout(Duration.ofMillis(200))
        .leaseMargin(Duration.ofMillis(800)).outcomes(OutcomePolicy.STORE_ALL).build();
    List<Vertx> replicas = List.of(Vertx.vertx(), Vertx.vertx());
    List<IdempotencyGuard> guards = new ArrayList<>();
    List<RedisBudgetStore> connections = new ArrayList<>();
    List<Integer> ports = new ArrayList<>();
    Map<String, Long> durations = new ConcurrentHashMap<>();
    boolean[] dataLost = new boolean[1];
    java.util.concurrent.atomic.AtomicInteger disconnected = new java.util.concurrent.atomic.AtomicInteger();
    try {
      for (Vertx v : replicas) {
        RedisBudgetStore connection = RedisBudgetStore.connect(redis.connectionOptions().commandTimeout(Duration.ofMillis(500)).build());
        connections.add(connection);
        IdempotencyGuard guard = new IdempotencyGuard(new ClaimStore(connection, Duration.ofMillis(250)), config);
        guards.add(guard);
        Router router = Router.router(v);
        router.route().handler(BodyHandler.create());
        router.post("/payments").handler(VertxIdempotency.handler(guard, ctx -> {
          String key = ctx.request().getHeader("Idempotency-Key");
          long fence = VertxIdempotency.context(ctx).fencingToken().orElseThrow();
          String body = ctx.body().asString();
          long duration = Long.parseLong(body.replaceAll(".*\"ms\":(\\d+).*", "$1"));
          Promise<StoredResponse> done = Promise.promise();
          effects.add(new Effect(key, fence)); // the side effect first, then the work, then maybe a failure
          v.setTimer(Math.max(1, duration), t -> {
            if (body.contains("\"fail\":true")) {
              done.fail(new IllegalStateException("failed after its side effect"));
            } else {
              done.complete(new StoredResponse(201, List.of(new StoredResponse.Header("Content-Type", "text/plain")),
                  ("charged " + key + " under " + fence).getBytes(StandardCharsets.UTF_8)));
            }
          });
          return done.future();
        }));
        ports.add(v.createHttpServer().requestHandler(router).listen(0, "127.0.0.1").await().actualPort());
      }
      HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
      List<CompletableFuture<?>> sent = new ArrayList<>();
      List<String> keys = List.of("s" + seed + "-a-" + System.nanoTime(), "s" + seed + "-b-" + System.nanoTime());
      for (String key : keys) {
        durations.put(key, (long) rnd.nextInt(1_500)); // past handlerTimeout (200 ms) and the lease (1 s) // one request body per key: same fingerprint for its duplicates
      }
      int faultKind = rnd.nextInt(3);
      long faultAt = rnd.nextInt(1_600);
      long faultFor = 100 + rnd.nextInt(600);
      long t0 = System.nanoTime();
      List<long[]> plan = new ArrayList<>();
      for (int i = 0; i < 16; i++) {
        // at, key, replica, fails after its side effect, the client disconnects after 30 ms
        plan.add(new long[] {rnd.nextInt(2_000), i % 2, rnd.nextInt(2), rnd.nextInt(4) == 0 ? 1 : 0,
            rnd.nextInt(4) == 0 ? 1 : 0});
      }
      plan.sort((a, b) -> Long.compare(a[0], b[0]));
      boolean faultDone = faultKind == 0;
      for (long[] p : plan) {
        if (!faultDone && p[0] >= faultAt) {
          faultDone = true;
          sleepUntil(t0, faultAt);
          fault(faultKind, faultFor, dataLost);
        }
        sleepUntil(t0, p[0]);
        String key = keys.get((int) p[1]);
        String body = "{\"ms\":" + durations.get(key) + (p[3] == 1 ? ",\"fail\":true" : "") + "}";
        // a failing and a succeeding body differ: another fingerprint (422) unless the key is free
        boolean disconnects = p[4] == 1;
        HttpRequest r = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + ports.get((int) p[2]) + "/payments"))
            .timeout(disconnects ? Duration.ofMillis(30) : Duration.ofSeconds(20)).header("Content-Type", "application/json")
            .header("Idempotency-Key", key).POST(HttpRequest.BodyPublishers.ofString(body)).build();
        // a client that gives up closes its connection while the handler runs: the server's answer is
        // lost on the wire, and must still be stored for the retries
        sent.add(http.sendAsync(r, HttpResponse.BodyHandlers.ofString()).thenAccept(resp -> answers.add(new Answer(key,
            resp.statusCode(), resp.body(), resp.headers().firstValue(IdempotencyGuard.REPLAYED_HEADER).isPresent())))
            .exceptionally(e -> {
              if (!disconnects) {
                throw new IllegalStateException("no answer for " + key, e);
              }
              disconnected.incrementAndGet();
              return null;
            }));
      }
      if (!faultDone) {
        sleepUntil(t0, faultAt);
        fault(faultKind, faultFor, dataLost);
      }
      CompletableFuture.allOf(sent.toArray(CompletableFuture[]::new)).get(60, TimeUnit.SECONDS);
      Eventually.await("every claim's lifecycle ended", Duration.ofSeconds(20),
          () -> guards.stream().allMatch(g -> g.renewing() == 0));
      long said = guards.stream().mapToLong(g -> g.stats().claimsLost() + g.stats().fencedWrites()).sum();
      int most = 0;
      for (String key : keys) {
        int n = (int) effects.stream().filter(e -> e.key().equals(key)).count();
        most = Math.max(most, n);
        if (n > 1 && !(dataLost[0] || faultKind == 1 && faultFor >= 330) ) {
          violations.add("seed " + seed + ": " + key + " executed " + n + " times with Redis healthy");
        } else if (n > 1 && !dataLost[0] && said == 0) {
          violations.add("seed " + seed + ": " + key + " executed " + n + " times and no holder was told it lost its claim");
        }
        Set<String> replays = new HashSet<>();
        answers.stream().filter(a -> a.key().equals(key) && a.replayed()).forEach(a -> replays.add(a.status() + " " + a.body()));
        if (!dataLost[0] && replays.size() > 1) {
          violations.add("seed " + seed + ": " + key + " replayed different answers " + replays);
        }
      }
      // no claim left blocking a key one lease after every holder ended
      Thread.sleep(config.lease().toMillis() + 100);
      for (String key : keys) {
        HttpRequest r = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + ports.get(0) + "/payments"))
            .header("Content-Type", "application/json").header("Idempotency-Key", key)
            .POST(HttpRequest.BodyPublishers.ofString("{\"ms\":" + durations.get(key) + "}")).build();
        int status = http.send(r, HttpResponse.BodyHandlers.ofString()).statusCode();
        if (status == 409) {
          violations.add("seed " + seed + ": " + key + " still claimed a lease after its holders ended");
        }
      }
      System.out.println("RealProcessScheduleTest seed " + seed + ": fault " + List.of("none", "SIGSTOP " + faultFor + " ms",
          "kill -9 + restart").get(faultKind) + " at " + faultAt + " ms, handler durations " + durations.values()
          + ", side effects " + effects.size() + " (most for one key " + most + "), holders told their claim was lost " + said
          + ", clients that disconnected " + disconnected.get());
      return most;
    } finally {
      guards.forEach(IdempotencyGuard::close);
      for (Vertx v : replicas) {
        v.close().await();
      }
      connections.forEach(RedisBudgetStore::close);
      if (!redis.server().isAlive()) {
        redis.server().restart();
      }
    }
  }

  private static void fault(int kind, long forMs, boolean[] dataLost) throws InterruptedException {
    if (kind == 1) {
      redis.server().pause();
      try {
        Thread.sleep(forMs);
      } finally {
        redis.server().resume();
      }
    } else if (kind == 2) {
      dataLost[0] = true;
      redis.server().restart(); // kill -9 and start again without persistence: every record lost
    }
  }

  private static void sleepUntil(long t0, long atMs) throws InterruptedException {
    long left = atMs - TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
    if (left > 0) {
      Thread.sleep(left);
    }
  }
}
