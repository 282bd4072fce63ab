package io.retrybudget.budget;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.redis.protocol.BudgetKeys;
import io.retrybudget.budget.redis.protocol.BudgetScripts;
import io.retrybudget.budget.redis.protocol.ConfigChange;
import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import io.retrybudget.testing.Eventually;
import io.retrybudget.testing.RedisExtension;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Registering a budget Redis already holds with another configuration: Redis's stays in force
 * (the first registration wins), the budget says which one is in force, and the difference is
 * logged once at INFO with both values. The call ceiling ({@code max_calls_per_s}) is part of that
 * configuration: the one in force is the one Redis holds, and a client that seeded it says nothing.
 */
class RegistrationTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();
  private static final Logger BUDGET_LOG = Logger.getLogger(RedisRetryBudget.class.getName());
  private final List<LogRecord> records = new CopyOnWriteArrayList<>();
  private final Handler capture = new Handler() {
    @Override
    public void publish(LogRecord r) {
      records.add(r);
    }

    @Override
    public void flush() {}

    @Override
    public void close() {}
  };

  @BeforeEach
  void listen() {
    BUDGET_LOG.addHandler(capture);
  }

  @AfterEach
  void stopListening() {
    BUDGET_LOG.removeHandler(capture);
  }

  private List<LogRecord> infos(String text) {
    return records.stream().filter(r -> r.getLevel() == Level.INFO && r.getMessage().contains(text)).toList();
  }

  private RedisBudgetClient client() {
    RedisBudgetClient c = RedisBudgetClient.builder(redis.connectionOptions().build())
        .callTimeout(Duration.ofSeconds(2)).flushInterval(Duration.ofMillis(50)).build();
    // build() waits for the connection at most the connect timeout (2 s), which a cold JVM missed at a
    // load of 22 (its budgets' first asks then came from the fallback); at a load of 16 it connects
    // within seconds
    Eventually.await("connected", Duration.ofSeconds(30), () -> !c.isDegraded());
    return c;
  }

  @Test
  void anotherConfigThanRedisHoldsIsLoggedOnceAndTheOneInForceIsExposed() {
    // a floor of 100 a second: the paced balance holds 50 permits, enough for the 21 asked for below
    BudgetConfig first = BudgetConfig.builder("registered").ratio(0.2).windowSeconds(10).minRetriesPerSecond(100).build();
    BudgetConfig other = BudgetConfig.builder("registered").ratio(0.5).windowSeconds(20).minRetriesPerSecond(7)
        .mode(BudgetMode.SHADOW).build();
    try (RedisBudgetClient a = client(); RedisBudgetClient b = client()) {
      RetryBudget firstBudget = a.budget(first);
      assertEquals(BudgetDecision.GRANTED, firstBudget.acquireBlocking());
      assertEquals(Optional.of(first), firstBudget.configInForce(), "the first registration is stored");

      RetryBudget otherBudget = b.budget(other);
      for (int i = 0; i < 20; i++) {
        assertEquals(BudgetDecision.GRANTED, otherBudget.acquireBlocking(), "Redis's enforce mode decides");
      }
      assertEquals(Optional.of(first), otherBudget.configInForce(), "Redis's configuration is in force, not the builder's");
      List<LogRecord> said = infos("budget registered: Redis already holds another configuration");
      assertEquals(1, said.size(), records.toString());
      String message = said.get(0).getMessage();
      assertTrue(message.contains(first.toString()) && message.contains(other.toString()), "both values: " + message);
      assertTrue(message.indexOf(first.toString()) < message.indexOf(other.toString()), "the one in force first: " + message);
      assertEquals(Optional.of(first), firstBudget.configInForce());
    }
    assertEquals(1, infos("Redis already holds another configuration").size(), "the matching client said nothing");
  }

  @Test
  void theCeilingInForceIsTheOneRedisHoldsAndFollowsALiveChange() throws Exception {
    // a ceiling other than the default (2,000): the seed stores it, and the replies carry it back
    BudgetConfig tight = BudgetConfig.builder("ceiling").ratio(0.1).minRetriesPerSecond(100).maxCallsPerSecond(10).build();
    try (RedisBudgetClient a = client(); RedisBudgetClient b = client()) {
      RedisRetryBudget first = (RedisRetryBudget) a.budget(tight);
      assertEquals(BudgetDecision.GRANTED, first.acquireBlocking());
      assertEquals("10", redis.server().call("HGET", new BudgetKeys("ceiling").config(), "max_calls_per_s"),
          "the seed stores the builder's ceiling");
      assertEquals(10, first.learned().maxCallsPerSecond(), "the ceiling that paces the flushes is Redis's");
      assertEquals(Optional.of(tight), first.configInForce(), "the seeding client sees its own ceiling in force");

      RedisRetryBudget second = (RedisRetryBudget) b.budget(tight);
      // its hello goes at once; at a load of 16 a local Redis answers it within seconds
      Eventually.await("second client heard", Duration.ofSeconds(30), () -> second.configInForce().isPresent());
      assertEquals(Optional.of(tight), second.configInForce(), "a client built with Redis's configuration");

      // both were built with the configuration Redis holds, ceiling included: nothing to say
      assertEquals(List.of(), infos("budget ceiling: Redis already holds another configuration").stream()
          .map(LogRecord::getMessage).toList());

      // the ceiling alone changed live (the coordinator's PUT max_calls_per_second): in force from the next reply
      try (RedisBudgetStore store = RedisBudgetStore.connect(redis.connectionOptions().build())) {
        new BudgetScripts(store).configure("ceiling", new ConfigChange(null, null, null, null, 40), tight)
            .get(5, TimeUnit.SECONDS);
      }
      // a call the timer's own flush holds in flight is skipped: ask again until a reply says 40
      Eventually.await("the new ceiling in a reply", Duration.ofSeconds(30), () -> {
        second.flush(true).join();
        return second.learned().maxCallsPerSecond() == 40;
      });
      assertEquals(40, second.configInForce().orElseThrow().maxCallsPerSecond(), "configInForce follows the ceiling");
    }
  }

  @Test
  void aLocalBudgetAnswersWithItsOwnConfig() {
    BudgetConfig config = BudgetConfig.builder("local").ratio(0.3).build();
    try (LocalRetryBudget local = new LocalRetryBudget(config)) {
      assertEquals(Optional.of(config), local.configInForce());
    }
  }
}
