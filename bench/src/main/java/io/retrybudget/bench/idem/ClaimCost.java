package io.retrybudget.bench.idem;

import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import io.retrybudget.budget.redis.transport.RedisConnectionOptions;
import io.retrybudget.server.Claim;
import io.retrybudget.server.ClaimStore;
import io.retrybudget.server.StoredResponse;
import io.retrybudget.testing.RedisServerProcess;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * What one execution of the Idempotency-Key store costs Redis itself: the time Redis spends inside
 * each script (INFO commandstats, {@code cmdstat_evalsha usec_per_call}), one script at a time so
 * that each has its own figure — claim of a new key, renewal, complete with a 200-byte answer, and
 * the claim that finds a finished record (a replay). Starts its own {@code redis-server}.
 *
 * <pre>
 * mvn -B -q -o -pl bench -am test-compile dependency:build-classpath -Dmdep.outputFile=$PWD/bench/target/cp.txt
 * java -cp bench/target/classes:$(cat bench/target/cp.txt) io.retrybudget.bench.idem.ClaimCost [keys per round] [rounds]
 * </pre>
 */
public final class ClaimCost {
  private static final int IN_FLIGHT = 64;

  private ClaimCost() {}

  public static void main(String[] args) {
    int keys = args.length > 0 ? Integer.parseInt(args[0]) : 20_000;
    int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 5;
    StoredResponse answer = new StoredResponse(201, List.of(new StoredResponse.Header("Content-Type", "application/json"),
        new StoredResponse.Header("Location", "/payments/ch_0123456789abcdef")),
        ("{\"charge_id\":\"ch_0123456789abcdef\",\"amount\":4200,\"currency\":\"eur\",\"status\":\"succeeded\","
            + "\"pad\":\"" + "x".repeat(90) + "\"}").getBytes(StandardCharsets.UTF_8));
    try (RedisServerProcess redis = RedisServerProcess.start();
        RedisBudgetStore connection = RedisBudgetStore.connect(RedisConnectionOptions.standalone(redis.uri()).build())) {
      ClaimStore store = new ClaimStore(connection, Duration.ofSeconds(5));
      System.out.println(String.valueOf(redis.call("INFO", "server")).lines().filter(l -> l.startsWith("redis_version:"))
          .findFirst().orElse("redis_version:?") + ", " + keys + " keys per round, " + rounds + " rounds (the first is warm-up)");
      System.out.printf("%-6s %14s %14s %14s %14s %20s%n", "round", "claim µs", "renew µs", "complete µs", "replay µs",
          "claim+complete µs");
      for (int round = 0; round <= rounds; round++) {
        List<String> names = new ArrayList<>(keys);
        for (int i = 0; i < keys; i++) {
          names.add(ClaimStore.idempotencyKey("bench", "POST", "/payments", round + "-" + i));
        }
        List<Claim.Claimed> claims = new ArrayList<>(keys);
        double claim = measure(redis, keys, i -> store.claim(names.get(i), "fp-" + i, Duration.ofSeconds(35))
            .thenAccept(c -> {
              synchronized (claims) {
                claims.add((Claim.Claimed) c);
              }
            }));
        double renew = measure(redis, keys, i -> store.renew(claims.get(i), Duration.ofSeconds(35)));
        double complete = measure(redis, keys, i -> store.complete(claims.get(i), answer, Duration.ofHours(24)));
        double replay = measure(redis, keys, i -> store.claim(names.get(i), "fp-" + i, Duration.ofSeconds(35)));
        String label = round == 0 ? "warm" : Integer.toString(round);
        System.out.printf("%-6s %14.2f %14.2f %14.2f %14.2f %20.2f%n", label, claim, renew, complete, replay, claim + complete);
        redis.call("FLUSHALL");
      }
    }
  }

  /** Runs {@code n} calls, {@code IN_FLIGHT} at a time, and returns Redis's µs per EVALSHA. */
  private static double measure(RedisServerProcess redis, int n, java.util.function.IntFunction<CompletableFuture<?>> call) {
    redis.call("CONFIG", "RESETSTAT");
    List<CompletableFuture<?>> window = new ArrayList<>(IN_FLIGHT);
    for (int i = 0; i < n; i++) {
      window.add(call.apply(i));
      if (window.size() == IN_FLIGHT) {
        CompletableFuture.allOf(window.toArray(CompletableFuture[]::new)).join();
        window.clear();
      }
    }
    CompletableFuture.allOf(window.toArray(CompletableFuture[]::new)).join();
    String stats = String.valueOf(redis.call("INFO", "commandstats"));
    return stats.lines().filter(l -> l.startsWith("cmdstat_evalsha:")).findFirst()
        .map(l -> Double.parseDouble(l.replaceAll(".*usec_per_call=([0-9.]+).*", "$1")))
        .orElseThrow(() -> new IllegalStateException("no evalsha in " + stats));
  }
}
