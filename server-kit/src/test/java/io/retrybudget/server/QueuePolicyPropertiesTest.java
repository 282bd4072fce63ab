package io.retrybudget.server;

import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.time.Duration;
import java.util.List;
import java.util.Random;
import java.util.function.UnaryOperator;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;

/**
 * The queue's promises on random schedules (jqwik; fake time, a timer that fires at the policy's
 * next expiry as the real one does), checked after every step by {@link QueueChecker}'s independent
 * model: no request starts at or past its deadline, none waits past its expiry (deadline, the long
 * timeout, or the short one while standing) or longer than the long timeout, the queue never
 * exceeds its bound, nobody waits while a worker is free, newest first only while the queue is
 * standing (oldest first otherwise), first attempts before retries, a first attempt is shed for a
 * full queue only when no retry waits, every request is decided exactly once. Broken variants of
 * the policy are caught.
 */
class QueuePolicyPropertiesTest {
  private static QueueConfig config(int workers, int maxQueue, int shortMs, int longMs, int intervalMs, boolean lifo) {
    return QueueConfig.builder(workers).maxQueue(maxQueue).shortTimeout(Duration.ofMillis(shortMs))
        .longTimeout(Duration.ofMillis(Math.max(shortMs, longMs))).interval(Duration.ofMillis(intervalMs))
        .adaptiveLifo(lifo).build();
  }

  @Provide
  Arbitrary<List<QueueChecker.Op>> schedules() {
    Arbitrary<QueueChecker.Op> offer = Combinators.combine(Arbitraries.integers().between(0, 2),
        Arbitraries.longs().between(-1, 150_000)).as((k, d) -> new QueueChecker.Offer(k == 0, d));
    Arbitrary<QueueChecker.Op> release = Arbitraries.just(new QueueChecker.Release());
    Arbitrary<QueueChecker.Op> advance = Arbitraries.longs().between(0, 20_000).map(QueueChecker.Advance::new);
    Arbitrary<QueueChecker.Op> cancel = Arbitraries.integers().between(0, 7).map(QueueChecker.Cancel::new);
    return Arbitraries.frequencyOf(net.jqwik.api.Tuple.of(4, offer), net.jqwik.api.Tuple.of(2, release),
        net.jqwik.api.Tuple.of(3, advance), net.jqwik.api.Tuple.of(1, cancel)).list().ofMaxSize(300);
  }

  @Property(tries = 2000)
  void everyScheduleKeepsTheRules(@ForAll @IntRange(min = 1, max = 3) int workers,
      @ForAll @IntRange(min = 0, max = 6) int maxQueue, @ForAll @IntRange(min = 1, max = 10) int shortMs,
      @ForAll @IntRange(min = 1, max = 60) int longMs, @ForAll @IntRange(min = 5, max = 120) int intervalMs,
      @ForAll boolean lifo, @ForAll("schedules") List<QueueChecker.Op> ops) {
    QueueConfig c = config(workers, maxQueue, shortMs, longMs, intervalMs, lifo);
    assertNull(QueueChecker.check(c, c, false, ops));
  }

  @Example
  void theCheckerCatchesAPolicyWithoutAdaptiveLifo() {
    assertCaught("LIFO", m -> config(1, 6, 5, 60, 20, false), false);
  }

  @Example
  void theCheckerCatchesAPolicyThatLetsRequestsWaitTooLong() {
    assertCaught("expiry", m -> config(1, 6, 20, 60, 20, true), false);
  }

  @Example
  void theCheckerCatchesAPolicyThatIgnoresDeadlines() {
    assertCaught("deadline", m -> m, true);
  }

  @Example
  void theCheckerCatchesAPolicyThatQueuesMoreThanItsBound() {
    assertCaught("bound", m -> config(1, 7, 5, 60, 20, true), false);
  }

  /** The broken policy (its config from the model's) breaks a rule within 300 random schedules. */
  private static void assertCaught(String what, UnaryOperator<QueueConfig> broken, boolean hideDeadlines) {
    QueueConfig model = config(1, 6, 5, 60, 20, true);
    String found = null;
    for (int seed = 0; seed < 300 && found == null; seed++) {
      found = QueueChecker.check(model, broken.apply(model), hideDeadlines, QueueChecker.randomOps(new Random(seed), 300));
    }
    assertNotNull(found, "a policy broken in its " + what + " passed 300 schedules");
  }
}
