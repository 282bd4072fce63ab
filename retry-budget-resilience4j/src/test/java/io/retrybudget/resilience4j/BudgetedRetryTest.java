package io.retrybudget.resilience4j;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.resilience4j.core.IntervalFunction;
import io.github.resilience4j.retry.Retry;
import io.github.resilience4j.retry.RetryConfig;
import io.github.resilience4j.retry.RetryRegistry;
import io.github.resilience4j.retry.event.RetryEvent;
import io.github.resilience4j.retry.internal.RetryImpl;
import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.BudgetDecision;
import io.retrybudget.budget.LocalRetryBudget;
import io.retrybudget.retry.RetryBudgetExhaustedException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The budget attached to Resilience4j's Retry, on an in-process budget with a fake clock and
 * Resilience4j's waits recorded instead of slept: every path (sync, supplier, result, async with an
 * answer at hand and with a pending one), success, retry then success, refusal without waiting.
 */
class BudgetedRetryTest {
  /** Resilience4j's synchronous waits, recorded instead of slept (its only hook: a static). */
  static final List<Long> SLEEPS = new CopyOnWriteArrayList<>();
  private static final long WAIT_MILLIS = 250;

  private final AtomicLong clock = new AtomicLong(1_000_000);
  private final List<RetryEvent> events = new ArrayList<>();

  @BeforeAll
  static void recordSleeps() {
    RetryImpl.setSleepFunction(SLEEPS::add);
  }

  @AfterAll
  static void restoreSleeps() {
    RetryImpl.setSleepFunction(Thread::sleep);
  }

  @BeforeEach
  void clearSleeps() {
    SLEEPS.clear();
  }

  /** A budget over this client's own counts: {@code floor} retries per second, no ratio to speak of. */
  private LocalRetryBudget budget(int floorPerSecond) {
    return new LocalRetryBudget(BudgetConfig.builder("payments-api").ratio(0.000001)
        .minRetriesPerSecond(floorPerSecond).windowSeconds(1).build(), clock::get);
  }

  private BudgetedRetry retry(RetryConfig config, io.retrybudget.budget.RetryBudget budget) {
    BudgetedRetry retry = BudgetedRetry.of("payments", config, budget);
    retry.getEventPublisher().onEvent(events::add);
    return retry;
  }

  private static RetryConfig threeAttempts() {
    return RetryConfig.custom().maxAttempts(3).waitDuration(Duration.ofMillis(WAIT_MILLIS)).build();
  }

  private static Callable<String> failingTimes(int failures, AtomicInteger calls) {
    return () -> {
      if (calls.incrementAndGet() <= failures) {
        throw new IOException("down " + calls.get());
      }
      return "ok";
    };
  }

  private List<String> eventTypes() {
    List<String> types = new ArrayList<>();
    for (RetryEvent e : events) {
      types.add(e.getEventType().name());
    }
    return types;
  }

  @Test
  void successCountsOneFirstAttemptAndAsksNothing() throws Exception {
    LocalRetryBudget budget = budget(0);
    BudgetedRetry retry = retry(threeAttempts(), budget);

    assertEquals("ok", retry.executeCallable(() -> "ok"));

    assertArrayEquals(new long[] {1, 0, 0}, budget.windowCounts());
    assertEquals(1, retry.getMetrics().getNumberOfSuccessfulCallsWithoutRetryAttempt());
    assertTrue(SLEEPS.isEmpty());
  }

  @Test
  void grantedRetryWaitsResilience4jsIntervalThenSucceeds() throws Exception {
    LocalRetryBudget budget = budget(5);
    BudgetedRetry retry = retry(threeAttempts(), budget);
    AtomicInteger calls = new AtomicInteger();

    assertEquals("ok", retry.executeCallable(failingTimes(1, calls)));

    assertEquals(2, calls.get());
    assertEquals(List.of(WAIT_MILLIS), SLEEPS);
    assertArrayEquals(new long[] {1, 1, 0}, budget.windowCounts());
    assertEquals(1, retry.getMetrics().getNumberOfSuccessfulCallsWithRetryAttempt());
    assertEquals(List.of("RETRY", "SUCCESS"), eventTypes());
  }

  @Test
  void refusedRetryFailsAtOnceWithTheLastFailureAndNoWait() {
    LocalRetryBudget budget = budget(0);
    BudgetedRetry retry = retry(threeAttempts(), budget);
    AtomicInteger calls = new AtomicInteger();

    RetryBudgetExhaustedException e = assertThrows(RetryBudgetExhaustedException.class,
        () -> retry.executeCallable(failingTimes(5, calls)));

    assertEquals(1, calls.get());
    assertInstanceOf(IOException.class, e.getCause());
    assertEquals("down 1", e.getCause().getMessage());
    assertEquals(BudgetDecision.Reason.DENIED_EXHAUSTED, e.decision().reason());
    assertTrue(SLEEPS.isEmpty(), "no wait before failing: " + SLEEPS);
    assertArrayEquals(new long[] {1, 0, 1}, budget.windowCounts());
    assertTrue(events.isEmpty(), "no retry event for a retry that did not happen: " + eventTypes());
  }

  @Test
  void theBudgetIsAskedOnlyWhenResilience4jWouldRetry() {
    LocalRetryBudget budget = budget(100);
    BudgetedRetry retry = retry(RetryConfig.custom().maxAttempts(3).waitDuration(Duration.ofMillis(WAIT_MILLIS))
        .ignoreExceptions(IllegalArgumentException.class).build(), budget);
    AtomicInteger calls = new AtomicInteger();

    // attempts run out: two retries asked and granted, the third failure is Resilience4j's to throw
    IOException last = assertThrows(IOException.class, () -> retry.executeCallable(failingTimes(9, calls)));
    assertEquals("down 3", last.getMessage());
    assertArrayEquals(new long[] {1, 2, 0}, budget.windowCounts());
    assertEquals(List.of(WAIT_MILLIS, WAIT_MILLIS), SLEEPS);
    assertEquals(1, retry.getMetrics().getNumberOfFailedCallsWithRetryAttempt());

    // not retryable: nothing asked
    assertThrows(IllegalArgumentException.class, () -> retry.executeCallable(() -> {
      throw new IllegalArgumentException("bad request");
    }));
    assertArrayEquals(new long[] {2, 2, 0}, budget.windowCounts());
  }

  @Test
  void retryableResultRefusedCarriesTheLastResult() {
    LocalRetryBudget budget = budget(0);
    BudgetedRetry retry = retry(RetryConfig.<String>custom().maxAttempts(3).waitDuration(Duration.ofMillis(WAIT_MILLIS))
        .retryOnResult("busy"::equals).build(), budget);
    AtomicInteger calls = new AtomicInteger();

    RetryBudgetExhaustedException e = assertThrows(RetryBudgetExhaustedException.class,
        () -> retry.executeCallable(() -> {
          calls.incrementAndGet();
          return "busy";
        }));

    assertEquals(1, calls.get());
    assertEquals("busy", e.lastResult());
    assertNull(e.getCause());
    assertTrue(SLEEPS.isEmpty());
  }

  @Test
  void decoratedSupplierAndCallableAndRunnableAreBudgetedToo() throws Exception {
    LocalRetryBudget budget = budget(0);
    BudgetedRetry retry = retry(threeAttempts(), budget);
    AtomicInteger calls = new AtomicInteger();
    Supplier<String> supplier = Retry.decorateSupplier(retry, () -> {
      calls.incrementAndGet();
      throw new UncheckedIOException(new IOException("down"));
    });
    RetryBudgetExhaustedException e = assertThrows(RetryBudgetExhaustedException.class, supplier::get);
    assertInstanceOf(UncheckedIOException.class, e.getCause());

    Callable<String> callable = Retry.decorateCallable(retry, failingTimes(9, calls));
    assertThrows(RetryBudgetExhaustedException.class, callable::call);

    Runnable runnable = retry.decorateRunnable(() -> {
      calls.incrementAndGet();
      throw new IllegalStateException("down");
    });
    assertThrows(RetryBudgetExhaustedException.class, runnable::run);

    assertEquals(3, calls.get());
    assertArrayEquals(new long[] {3, 0, 3}, budget.windowCounts());
    assertTrue(SLEEPS.isEmpty());
  }

  @Test
  void executeMethodsCountOnceAndAreBudgeted() throws Throwable {
    LocalRetryBudget budget = budget(0);
    BudgetedRetry retry = retry(threeAttempts(), budget);

    assertEquals("ok", retry.executeSupplier(() -> "ok"));
    assertEquals("ok", retry.executeCheckedSupplier(() -> "ok"));
    retry.executeRunnable(() -> { });
    assertArrayEquals(new long[] {3, 0, 0}, budget.windowCounts());

    assertThrows(RetryBudgetExhaustedException.class, () -> retry.executeSupplier(() -> {
      throw new IllegalStateException("down");
    }));
    assertThrows(RetryBudgetExhaustedException.class, () -> retry.executeCheckedSupplier(() -> {
      throw new IOException("down");
    }));
    assertThrows(RetryBudgetExhaustedException.class, () -> retry.executeRunnable(() -> {
      throw new IllegalStateException("down");
    }));
    assertArrayEquals(new long[] {6, 0, 3}, budget.windowCounts());
    assertEquals(3, retry.getMetrics().getNumberOfSuccessfulCallsWithoutRetryAttempt());
    assertTrue(SLEEPS.isEmpty());
  }

  @Test
  void aRefusalFromANestedBudgetIsNotRetriedHere() {
    LocalRetryBudget budget = budget(100);
    BudgetedRetry retry = retry(threeAttempts(), budget);
    AtomicInteger calls = new AtomicInteger();
    RetryBudgetExhaustedException inner = new RetryBudgetExhaustedException("downstream",
        BudgetDecision.DENIED_EXHAUSTED, new IOException("down"), null);

    RetryBudgetExhaustedException thrown = assertThrows(RetryBudgetExhaustedException.class, () -> retry.executeCallable(() -> {
      calls.incrementAndGet();
      throw inner;
    }));

    assertSame(inner, thrown);
    assertEquals(1, calls.get());
    assertArrayEquals(new long[] {1, 0, 0}, budget.windowCounts());
  }

  @Test
  void keepsResilience4jsConfigurationNameAndTags() {
    RetryConfig config = RetryConfig.custom().maxAttempts(4).intervalFunction(IntervalFunction.ofExponentialBackoff(100, 2)).build();
    Retry plain = Retry.of("inventory", config, java.util.Map.of("team", "shop"));
    BudgetedRetry retry = BudgetedRetry.attach(plain, budget(0));

    assertEquals("inventory", retry.getName());
    assertSame(config, retry.getRetryConfig());
    assertEquals(java.util.Map.of("team", "shop"), retry.getTags());
    assertThrows(IllegalArgumentException.class, () -> BudgetedRetry.attach(retry, budget(0)));
  }

  @Test
  void exponentialBackoffOfResilience4jIsKept() throws Exception {
    LocalRetryBudget budget = budget(100);
    BudgetedRetry retry = retry(RetryConfig.custom().maxAttempts(4)
        .intervalFunction(IntervalFunction.ofExponentialBackoff(100, 2)).build(), budget);

    assertEquals("ok", retry.executeCallable(failingTimes(3, new AtomicInteger())));

    assertEquals(List.of(100L, 200L, 400L), SLEEPS);
  }

  @Test
  void attachToARegistryReplacesItsEntry() {
    RetryRegistry registry = RetryRegistry.of(threeAttempts());
    Retry before = registry.retry("orders");

    BudgetedRetry retry = BudgetedRetry.attach(registry, "orders", budget(0));

    assertSame(retry, registry.retry("orders"));
    assertSame(before.getRetryConfig(), retry.getRetryConfig());
  }

  // ---- CompletionStage ----

  private static Supplier<CompletionStage<String>> asyncFailingTimes(int failures, AtomicInteger calls) {
    return () -> {
      if (calls.incrementAndGet() <= failures) {
        return CompletableFuture.failedFuture(new IOException("down " + calls.get()));
      }
      return CompletableFuture.completedFuture("ok");
    };
  }

  @Test
  void asyncGrantedAtHandSchedulesResilience4jsWait() throws Exception {
    LocalRetryBudget budget = budget(5);
    BudgetedRetry retry = retry(threeAttempts(), budget);
    ManualScheduler scheduler = new ManualScheduler();
    AtomicInteger calls = new AtomicInteger();

    CompletableFuture<String> result = retry.executeCompletionStage(scheduler, asyncFailingTimes(1, calls)).toCompletableFuture();

    assertFalse(result.isDone());
    assertEquals(1, scheduler.history().size());
    assertEquals(WAIT_MILLIS, scheduler.history().get(0).delayMillis);
    scheduler.runQueued();
    assertEquals("ok", result.get(1, TimeUnit.SECONDS));
    assertEquals(2, calls.get());
    assertArrayEquals(new long[] {1, 1, 0}, budget.windowCounts());
    assertEquals(1, retry.getMetrics().getNumberOfSuccessfulCallsWithRetryAttempt());
    assertEquals(List.of("RETRY", "SUCCESS"), eventTypes());
  }

  @Test
  void asyncRefusedAtHandFailsAtOnce() {
    LocalRetryBudget budget = budget(0);
    BudgetedRetry retry = retry(threeAttempts(), budget);
    ManualScheduler scheduler = new ManualScheduler();
    AtomicInteger calls = new AtomicInteger();

    CompletableFuture<String> result = retry.decorateCompletionStage(scheduler, asyncFailingTimes(9, calls)).get().toCompletableFuture();

    assertTrue(result.isCompletedExceptionally());
    ExecutionException e = assertThrows(ExecutionException.class, () -> result.get(1, TimeUnit.SECONDS));
    RetryBudgetExhaustedException refused = assertInstanceOf(RetryBudgetExhaustedException.class, e.getCause());
    assertEquals("down 1", refused.getCause().getMessage());
    assertTrue(scheduler.history().isEmpty(), "nothing scheduled, no wait");
    assertEquals(1, calls.get());
    assertTrue(events.isEmpty(), eventTypes().toString());
  }

  @Test
  void asyncPendingAnswerIsAwaitedWithoutBlockingThenGrants() throws Exception {
    ControlledBudget budget = new ControlledBudget();
    BudgetedRetry retry = retry(threeAttempts(), budget);
    ManualScheduler scheduler = new ManualScheduler();
    AtomicInteger calls = new AtomicInteger();

    CompletableFuture<String> result = retry.executeCompletionStage(scheduler, asyncFailingTimes(1, calls)).toCompletableFuture();

    // the caller's thread is back while the budget has not answered; nothing scheduled yet
    assertEquals(1, budget.askedCount());
    assertTrue(scheduler.history().isEmpty());
    budget.answer(0, BudgetDecision.GRANTED);
    assertEquals(1, scheduler.history().size());
    assertEquals(WAIT_MILLIS, scheduler.history().get(0).delayMillis);
    scheduler.runQueued();
    assertEquals("ok", result.get(1, TimeUnit.SECONDS));
    assertEquals(1, budget.firstAttempts.get());
  }

  @Test
  void asyncPendingRefusalCompletesOnTheSchedulerWithoutWaiting() {
    ControlledBudget budget = new ControlledBudget();
    BudgetedRetry retry = retry(threeAttempts(), budget);
    ManualScheduler scheduler = new ManualScheduler();
    AtomicInteger calls = new AtomicInteger();

    CompletableFuture<String> result = retry.executeCompletionStage(scheduler, asyncFailingTimes(9, calls)).toCompletableFuture();
    budget.answer(0, BudgetDecision.DENIED_EXHAUSTED);

    // handed to the scheduler at once (no delay), not completed on the thread the budget answered on
    assertFalse(result.isDone());
    assertEquals(1, scheduler.history().size());
    assertEquals(0, scheduler.history().get(0).delayMillis);
    scheduler.runQueued();
    ExecutionException e = assertThrows(ExecutionException.class, () -> result.get(1, TimeUnit.SECONDS));
    RetryBudgetExhaustedException refused = assertInstanceOf(RetryBudgetExhaustedException.class, e.getCause());
    assertEquals("down 1", refused.getCause().getMessage());
    assertEquals(1, calls.get());
  }

  @Test
  void aSupplierThatThrowsOrReturnsNoStageIsAFailedAttemptNotAHang() throws Exception {
    LocalRetryBudget budget = budget(5);
    BudgetedRetry retry = retry(threeAttempts(), budget);
    ManualScheduler scheduler = new ManualScheduler();
    AtomicInteger calls = new AtomicInteger();

    CompletableFuture<String> result = retry.executeCompletionStage(scheduler, () -> {
      switch (calls.incrementAndGet()) {
        case 1:
          throw new IllegalStateException("thrown, not returned");
        case 2:
          return null;
        default:
          return CompletableFuture.completedFuture("ok");
      }
    }).toCompletableFuture();
    scheduler.runQueued();
    scheduler.runQueued();

    assertEquals("ok", result.get(1, TimeUnit.SECONDS));
    assertEquals(3, calls.get());
  }

  @Test
  void cancellingTheStageStopsTheScheduledRetry() {
    LocalRetryBudget budget = budget(5);
    BudgetedRetry retry = retry(threeAttempts(), budget);
    ManualScheduler scheduler = new ManualScheduler();
    AtomicInteger calls = new AtomicInteger();

    CompletableFuture<String> result = retry.executeCompletionStage(scheduler, asyncFailingTimes(9, calls)).toCompletableFuture();
    assertEquals(1, scheduler.queuedCount());
    result.cancel(false);

    assertTrue(scheduler.history().get(0).isCancelled());
    assertEquals(0, scheduler.runQueued());
    assertEquals(1, calls.get());
  }

  @Test
  void asyncAttemptsRunOutLikeResilience4jsOwnLoop() {
    LocalRetryBudget budget = budget(100);
    BudgetedRetry retry = retry(threeAttempts(), budget);
    ManualScheduler scheduler = new ManualScheduler();
    AtomicInteger calls = new AtomicInteger();

    CompletableFuture<String> result = retry.executeCompletionStage(scheduler, asyncFailingTimes(9, calls)).toCompletableFuture();
    scheduler.runQueued();
    scheduler.runQueued();

    ExecutionException e = assertThrows(ExecutionException.class, () -> result.get(1, TimeUnit.SECONDS));
    assertEquals("down 3", e.getCause().getMessage());
    assertEquals(3, calls.get());
    assertArrayEquals(new long[] {1, 2, 0}, budget.windowCounts());
    assertEquals(1, retry.getMetrics().getNumberOfFailedCallsWithRetryAttempt());
  }

  @Test
  void resilience4jsOwnAsyncDriverAsksTheBudgetToo() {
    LocalRetryBudget budget = budget(0);
    BudgetedRetry retry = retry(threeAttempts(), budget);
    ManualScheduler scheduler = new ManualScheduler();
    AtomicInteger calls = new AtomicInteger();

    // the static decorator drives asyncContext() itself
    CompletableFuture<String> result = Retry.decorateCompletionStage(retry, scheduler, asyncFailingTimes(9, calls))
        .get().toCompletableFuture();

    ExecutionException e = assertThrows(ExecutionException.class, () -> result.get(1, TimeUnit.SECONDS));
    assertInstanceOf(RetryBudgetExhaustedException.class, e.getCause());
    assertTrue(scheduler.history().isEmpty());
    assertArrayEquals(new long[] {1, 0, 1}, budget.windowCounts());
  }
}
