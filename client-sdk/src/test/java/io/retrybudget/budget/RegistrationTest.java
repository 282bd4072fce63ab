package io.retrybudget.budget;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.testing.Eventually;
import io.retrybudget.testing.RedisExtension;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
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
 * logged once at INFO with both values.
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
  void aLocalBudgetAnswersWithItsOwnConfig() {
    BudgetConfig config = BudgetConfig.builder("local").ratio(0.3).build();
    try (LocalRetryBudget local = new LocalRetryBudget(config)) {
      assertEquals(Optional.of(config), local.configInForce());
    }
  }
}
