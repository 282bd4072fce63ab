package io.retrybudget.coordinator.relay;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.BudgetDecision;
import io.retrybudget.budget.RedisBudgetClient;
import io.retrybudget.budget.RetryBudget;
import io.retrybudget.budget.redis.protocol.BudgetKeys;
import io.retrybudget.budget.redis.protocol.BudgetScripts;
import io.retrybudget.budget.redis.protocol.LuaScript;
import io.retrybudget.budget.redis.protocol.StatusReply;
import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import io.retrybudget.budget.redis.transport.RedisConnectionOptions;
import io.retrybudget.testing.Eventually;
import io.retrybudget.testing.RedisExtension;
import io.retrybudget.testing.RespClient;
import io.vertx.core.Vertx;
import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A relay on real processes: a real redis-server, the relay host in-process, and an unchanged
 * {@link RedisBudgetClient} whose URI is the relay's. Every wait is an {@link Eventually} with a bound
 * of seconds against a relay that calls Redis every 100-500 ms, so a loaded machine only slows it.
 */
class RelayHostTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();

  private static Vertx vertx;
  private static RedisBudgetStore store;
  private static BudgetScripts scripts;
  private static RelayHost relay;
  private static RedisBudgetClient client;

  @BeforeAll
  static void start() throws Exception {
    vertx = Vertx.vertx();
    store = RedisBudgetStore.connect(redis.connectionOptions().build());
    scripts = new BudgetScripts(store);
    relay = RelayHost.start(vertx, scripts, RelayHostOptions.builder().build())
        .toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    client = RedisBudgetClient.builder(RedisConnectionOptions.standalone("redis://127.0.0.1:" + relay.port()).build())
        .callTimeout(Duration.ofSeconds(1)).exhaustedCacheTime(Duration.ZERO).build();
  }

  @AfterAll
  static void stop() throws Exception {
    if (client != null) {
      client.close();
    }
    if (relay != null) {
      relay.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    }
    if (store != null) {
      store.close();
    }
    if (vertx != null) {
      vertx.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    }
  }

  private static StatusReply status(String name) {
    return scripts.status(name, BudgetConfig.builder(name).build()).orTimeout(5, TimeUnit.SECONDS).join();
  }

  @Test
  void firstAttemptsReachRedisOnceAndOnlyTheRelayCallsRedis() throws Exception {
    RetryBudget budget = client.budget(BudgetConfig.builder("relayed-counts").build());
    for (int i = 0; i < 100; i++) {
      budget.recordFirstAttempt();
    }
    Eventually.await("100 first attempts in Redis", Duration.ofSeconds(10), () -> status("relayed-counts").requests() >= 100);
    // one more, after both hops have answered the first hundred: had any hop applied a report twice,
    // Redis would hold more than 101 once this one is in
    budget.recordFirstAttempt();
    Eventually.await("the 101st in Redis", Duration.ofSeconds(10), () -> status("relayed-counts").requests() >= 101);
    assertEquals(101, status("relayed-counts").requests(), "applied once, not twice");
    Map<?, ?> callers = hash(new BudgetKeys("relayed-counts").clients());
    // the hash's field "" is budget.lua's fleet record; every other field is a caller
    assertEquals(List.of(relay.clientId()), callers.keySet().stream().map(String::valueOf).filter(f -> !f.isEmpty()).toList(),
        "Redis heard from the relay only, not from the client");
    assertFalse(budget.isDegraded(), "the client takes the relay for its Redis");
    assertEquals(0L, (long) relay.inspect("relayed-counts", r -> r.lostRequests())
        .toCompletionStage().toCompletableFuture().get(5, TimeUnit.SECONDS));
  }

  @Test
  void permitsAreGrantedFromTheShareTheRelayDraws() throws Exception {
    RetryBudget budget = client.budget(BudgetConfig.builder("relayed-grants").minRetriesPerSecond(20).build());
    // the relay holds nothing until its first draw: the first asks may be refused, then it draws for them
    Eventually.await("a permit granted through the relay", Duration.ofSeconds(10),
        () -> budget.acquireBlocking() == BudgetDecision.GRANTED);
    assertFalse(budget.isDegraded());
    Eventually.await("the relay's draws counted in Redis", Duration.ofSeconds(10),
        () -> status("relayed-grants").retries() >= 1);
  }

  @Test
  void aLoneRetryThroughAnIdleRelayIsGrantedAtOnceAndPaidFromTheBalance() throws Exception {
    RetryBudget budget = client.budget(BudgetConfig.builder("relayed-lone").ratio(0.1).minRetriesPerSecond(0).build());
    for (int i = 0; i < 200; i++) {
      budget.recordFirstAttempt();
    }
    // the relay has drawn nothing (no ask yet); Redis's reply to its call says the balance holds 20
    Eventually.await("200 first attempts in Redis", Duration.ofSeconds(10), () -> status("relayed-lone").requests() >= 200);
    BudgetDecision lone = budget.acquireBlocking();
    assertEquals(BudgetDecision.GRANTED, lone, "a lone retry on a budget with permits to spare, at its first ask");
    // the grant (a lease, as Redis grants one) goes to Redis as retries granted at the relay, with the
    // relay's next call; nothing was drawn for it, so nothing drawn is dropped unused
    Eventually.await("the lent grant counted in Redis", Duration.ofSeconds(10), () -> status("relayed-lone").retries() >= 1);
    assertTrue(status("relayed-lone").retries() <= 20, "within the balance: " + status("relayed-lone").retries());
    assertEquals(0L, (long) relay.inspect("relayed-lone", r -> r.droppedPermits())
        .toCompletionStage().toCompletableFuture().get(5, TimeUnit.SECONDS), "no permit drawn to be dropped");
  }

  @Test
  void aRefusalComesBackAsBudgetLuaGivesIt() throws Exception {
    RetryBudget budget = client.budget(BudgetConfig.builder("relayed-refusal").ratioPpm(1).minRetriesPerSecond(0).build());
    BudgetDecision d = budget.acquireBlocking();
    assertEquals(BudgetDecision.Reason.DENIED_EXHAUSTED, d.reason(), "refused as exhausted, not by a fallback");
    assertFalse(budget.isDegraded());
    Eventually.await("the refusal counted in Redis", Duration.ofSeconds(10), () -> status("relayed-refusal").denied() >= 1);

    // the same call, raw, to Redis and to the relay: the same shape, element by element
    BudgetKeys k = new BudgetKeys("relayed-refusal");
    List<String> call = List.of("EVALSHA", LuaScript.BUDGET.sha1(), "5", k.config(), k.window(), k.clients(), k.index(),
        k.pace(), "raw-client", "1", "0", "0", "1", "1", "1", "10", "0", "enforce", "2000", "");
    List<?> fromRedis;
    List<?> fromRelay;
    try (RespClient r = new RespClient("127.0.0.1", redis.server().port(), 5_000);
        RespClient q = new RespClient("127.0.0.1", relay.port(), 5_000)) {
      fromRedis = (List<?>) r.call(call);
      fromRelay = (List<?>) q.call(call);
    }
    assertEquals(15, fromRedis.size());
    assertEquals(16, fromRelay.size(), "budget.lua's 15 values and the relay's call ceiling");
    for (int i = 0; i < 15; i++) {
      assertEquals(fromRedis.get(i).getClass(), fromRelay.get(i).getClass(), "type of element " + i);
    }
    assertEquals(Long.class, fromRelay.get(15).getClass(), "the call ceiling, an integer");
    assertEquals("denied", fromRelay.get(0));
    assertEquals(fromRedis.subList(0, 2), fromRelay.subList(0, 2), "status and granted");
    assertEquals(fromRedis.subList(7, 11), fromRelay.subList(7, 11), "ratio, window, floor, mode");
    assertEquals(fromRedis.get(14), fromRelay.get(14), "max_calls_per_s: the budget's own, as Redis holds it");
    // the SDK's configuration in force is Redis's, not the relay's ceiling in its clients' terms
    assertEquals(2_000, budget.configInForce().orElseThrow().maxCallsPerSecond(), "through a relay: "
        + budget.configInForce());
  }

  @Test
  void theHandshakeAndScriptCacheAnswerAsRedisDoes() throws Exception {
    try (RespClient q = new RespClient("127.0.0.1", relay.port(), 5_000)) {
      assertEquals("PONG", q.call("PING"));
      assertEquals("OK", q.call("CLIENT", "SETNAME", "x"));
      assertEquals(LuaScript.BUDGET.sha1(), q.call("SCRIPT", "LOAD", LuaScript.BUDGET.body()));
      assertEquals(List.of(1L, 0L), q.call("SCRIPT", "EXISTS", LuaScript.BUDGET.sha1(), LuaScript.STATUS.sha1()));
      assertEquals("Redis error: NOSCRIPT No matching script. Please use EVAL.",
          org.junit.jupiter.api.Assertions.assertThrows(IOException.class,
              () -> q.call("EVALSHA", LuaScript.STATUS.sha1(), "0")).getMessage());
    }
    try (RespClient r = new RespClient("127.0.0.1", redis.server().port(), 5_000)) {
      assertEquals(LuaScript.BUDGET.sha1(), r.call("SCRIPT", "LOAD", LuaScript.BUDGET.body()), "Redis's sha is the relay's");
    }
  }

  @Test
  void garbageGetsOneErrorAndTheConnectionIsClosed() throws Exception {
    assertEquals("-ERR Protocol error: expected '*', got 'G'\r\n", answerThenClose("GET x\r\n"));
    assertEquals("-ERR Protocol error: invalid bulk length 999999999 (0 to 262144)\r\n",
        answerThenClose("*1\r\n$999999999\r\n"));
    assertEquals("+PONG\r\n-ERR Protocol error: expected '$', got '*'\r\n",
        answerThenClose("*1\r\n$4\r\nPING\r\n*2\r\n*1\r\n"));
  }

  @Test
  void connectionsPastTheCapAreRefusedUntilOneCloses() throws Exception {
    RelayHost small = RelayHost.start(vertx, scripts, RelayHostOptions.builder().maxConnections(1).build())
        .toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    try {
      try (RespClient first = new RespClient("127.0.0.1", small.port(), 5_000)) {
        assertEquals("PONG", first.call("PING"));
        try (Socket second = new Socket("127.0.0.1", small.port())) {
          second.setSoTimeout(5_000);
          assertEquals("-ERR max number of clients reached\r\n",
              new String(second.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1));
        }
      }
      Eventually.await("a connection again once the first closed", Duration.ofSeconds(10), () -> {
        try (RespClient again = new RespClient("127.0.0.1", small.port(), 5_000)) {
          return "PONG".equals(again.call("PING"));
        } catch (IOException e) {
          return false;
        }
      });
    } finally {
      small.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    }
  }

  /** Sends {@code text} raw; returns all the relay answered until it closed the connection. */
  private static String answerThenClose(String text) throws IOException {
    try (Socket s = new Socket("127.0.0.1", relay.port())) {
      s.setSoTimeout(5_000);
      s.getOutputStream().write(text.getBytes(StandardCharsets.ISO_8859_1));
      InputStream in = s.getInputStream();
      return new String(in.readAllBytes(), StandardCharsets.ISO_8859_1); // returns at the relay's close
    }
  }

  private static Map<?, ?> hash(String key) throws Exception {
    try (RespClient r = new RespClient("127.0.0.1", redis.server().port(), 5_000)) {
      List<?> flat = (List<?>) r.call("HGETALL", key);
      java.util.LinkedHashMap<Object, Object> m = new java.util.LinkedHashMap<>();
      for (int i = 0; i < flat.size(); i += 2) {
        m.put(flat.get(i), flat.get(i + 1));
      }
      return m;
    }
  }
}
