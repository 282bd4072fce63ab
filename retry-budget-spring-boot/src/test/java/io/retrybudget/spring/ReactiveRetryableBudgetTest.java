package io.retrybudget.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.retry.RetryBudgetExhaustedException;
import io.retrybudget.spring.RetryableBudgetTest.Backend;
import io.retrybudget.testing.Eventually;
import io.retrybudget.testing.RedisExtension;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.ApplicationListener;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.resilience.annotation.EnableResilientMethods;
import org.springframework.resilience.annotation.Retryable;
import org.springframework.resilience.retry.MethodRetryEvent;
import reactor.core.Disposable;
import reactor.core.Exceptions;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.test.scheduler.VirtualTimeScheduler;

/**
 * Spring Framework 7's {@code @Retryable} on methods returning {@code Mono} and {@code Flux}, paid
 * for by fleet budgets in real application contexts against a real Redis. Spring retries such
 * methods with Reactor's {@code Retry.backoff} on {@code Schedulers.parallel()}; the tests put a
 * {@link VirtualTimeScheduler} there (Reactor's own way to test time), so the back-off is checked to
 * the millisecond and nothing sleeps. Budgets: {@code spend} holds at most 4 permits, refilled by
 * its floor at 8 a second; {@code none} allows none.
 */
class ReactiveRetryableBudgetTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();
  private static final Duration BOUND = Duration.ofSeconds(20);

  /** The application's reactive service: each subscription calls the backend once. */
  public static class Service {
    private final Backend backend = new Backend();

    public Backend backend() {
      return backend;
    }

    // README:begin
    @Retryable(maxRetries = 3, delay = 40)
    @FleetBudget("spend")
    public Mono<String> spend() {
      return Mono.fromCallable(backend::call);   // each subscription calls the backend once
    }
    // README:end

    // an hour between attempts: a refusal that waited first would not answer
    @Retryable(maxRetries = 3, delay = 3_600_000)
    @FleetBudget("none")
    public Mono<String> refused() {
      return Mono.fromCallable(backend::call);
    }

    @Retryable(maxRetries = 3, delay = 3_600_000)
    @FleetBudget("spend")
    public Flux<String> hourly() {
      return Flux.defer(() -> Mono.fromCallable(backend::call).flux());
    }

    @Retryable(maxRetries = 3, delay = 0, includes = IllegalStateException.class)
    @FleetBudget("spend")
    public Mono<String> notRetryable() {
      return Mono.fromCallable(backend::call);
    }

    @Retryable(maxRetries = 2, delay = 0)
    public Mono<String> defaultBudget() {
      return Mono.fromCallable(backend::call);
    }
  }

  @Configuration(proxyBeanMethods = false)
  @EnableResilientMethods
  static class App {
    final List<MethodRetryEvent> events = new CopyOnWriteArrayList<>();

    @Bean
    Service service() {
      return new Service();
    }

    @Bean
    ApplicationListener<MethodRetryEvent> retryEvents() {
      return events::add;
    }
  }

  /** Reactor's virtual time, counting the timers set on it, fired and disposed of. */
  static final class CountingVirtualTime extends VirtualTimeScheduler {
    final AtomicInteger set = new AtomicInteger();
    final AtomicInteger fired = new AtomicInteger();
    final AtomicInteger disposed = new AtomicInteger();

    CountingVirtualTime() {
      super(false);
    }

    @Override
    public Disposable schedule(Runnable task, long delay, TimeUnit unit) {
      Disposable timer = super.schedule(() -> {
        fired.incrementAndGet();
        task.run();
      }, delay, unit);
      // counted once queued, its due time fixed: a test that saw it counted and moves time on moves it
      set.incrementAndGet();
      return () -> {
        if (!timer.isDisposed()) {
          disposed.incrementAndGet();
        }
        timer.dispose();
      };
    }

    int pending() {
      return set.get() - fired.get() - disposed.get();
    }

    /** A permit is asked from Redis first: its answer sets the back-off timer on Redis's I/O thread. */
    void awaitTimers(int count) {
      Eventually.await(count + " back-off timers set", BOUND, () -> set.get() >= count);
    }
  }

  private CountingVirtualTime time;

  @BeforeEach
  void virtualTimeAndEmptyRedis() {
    redis.flushAll();
    time = new CountingVirtualTime();
    VirtualTimeScheduler.getOrSet(time);
  }

  @AfterEach
  void realTime() {
    VirtualTimeScheduler.reset();
  }

  private ApplicationContextRunner runner() {
    return new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(RetryBudgetAutoConfiguration.class))
        .withUserConfiguration(App.class)
        .withPropertyValues(
            "retrybudget.redis.uri=" + redis.uri(),
            // the answers must be Redis's, not the fallback's: a permit call is one round trip of
            // microseconds of Redis, well under a second even at a load of 16 on 2 cores (an eighth
            // of a core each for Redis and Lettuce's thread); 5 s, the longest the builder takes,
            // keeps a late GC pause or a scheduler stall on top of that from making it a timeout
            "retrybudget.call-timeout=5s",
            "retrybudget.budgets.spend.ratio=0.000001",
            "retrybudget.budgets.spend.min-retries-per-second=8",
            "retrybudget.budgets.spend.window-seconds=10",
            "retrybudget.budgets.none.ratio=0.000001",
            "retrybudget.budgets.none.min-retries-per-second=0");
  }

  /** The budget's counts in Redis, for the whole fleet. */
  private static long redisCount(AssertableApplicationContext context, String budget, String count) {
    Object value = context.getBean(RetryBudgetStatus.class)
        .status(budget, context.getBean(RetryBudgets.class).budget(budget)).get(count);
    assertInstanceOf(Number.class, value, "Redis answered: " + value);
    return ((Number) value).longValue();
  }

  @Test
  void aMonoFailingTwiceRetriesAfterSpringsDelayWithPermitsCountedInRedis() {
    runner().run(context -> {
      Service service = context.getBean(Service.class);
      service.backend().failures = 2;
      Mono<String> call = service.spend();
      assertEquals(0, service.backend().calls.get(), "nothing runs before the subscription");
      List<String> answers = new CopyOnWriteArrayList<>();
      call.subscribe(answers::add);
      assertEquals(1, service.backend().calls.get());

      time.awaitTimers(1);                                  // first retry granted by Redis, then Spring's 40 ms
      time.advanceTimeBy(Duration.ofMillis(39));
      assertEquals(1, service.backend().calls.get(), "resubscribed before Spring's delay");
      time.advanceTimeBy(Duration.ofMillis(1));
      assertEquals(2, service.backend().calls.get());

      time.awaitTimers(2);
      time.advanceTimeBy(Duration.ofMillis(40));
      assertEquals(List.of("ok after 3"), answers);
      assertEquals(2, redisCount(context, "spend", "retries"), "each retry granted by Redis, counted there");
      // the subscription's one first attempt, flushed to Redis within the flush interval
      Eventually.await("the first attempt counted in Redis", BOUND, () -> redisCount(context, "spend", "requests") == 1);
    });
  }

  @Test
  void aRefusalFailsTheSubscriberAtOnceWithTheBudgetsError() {
    runner().run(context -> {
      Service service = context.getBean(Service.class);
      RetryBudgetExhaustedException e = assertThrows(RetryBudgetExhaustedException.class,
          () -> service.refused().block(BOUND)); // no virtual time passes: an hour's wait would not answer
      assertEquals(1, service.backend().calls.get());
      assertTrue(e.getMessage().startsWith("retry budget 'none'"), e.getMessage());
      assertInstanceOf(IOException.class, e.getCause());
      assertEquals("down 1", e.getCause().getMessage());
      assertEquals(0, time.set.get(), "no back-off timer for a refused retry");

      List<MethodRetryEvent> events = context.getBean(App.class).events;
      assertEquals(2, events.size(), events.toString());
      assertEquals(e.getCause(), events.get(0).getFailure());
      assertTrue(events.get(1).isRetryAborted());
      assertEquals(e, events.get(1).getFailure());
    });
  }

  @Test
  void cancellingDuringTheBackOffDisposesOfItsTimer() {
    runner().run(context -> {
      Service service = context.getBean(Service.class);
      Disposable subscription = service.hourly().subscribe(v -> { }, e -> { });
      time.awaitTimers(1);
      assertEquals(1, time.pending(), "the hour's back-off");
      subscription.dispose();
      // the timer is set on Redis's I/O thread, which may still be handing it to Reactor's delay
      // when the cancel comes: then that thread disposes of it as soon as it is handed over
      Eventually.await("the back-off timer disposed of", BOUND, () -> time.disposed.get() == 1);
      assertEquals(0, time.pending());
      time.advanceTimeBy(Duration.ofHours(2));
      assertEquals(1, service.backend().calls.get(), "never resubscribed");
      assertEquals(0, time.fired.get());
      assertEquals(1, redisCount(context, "spend", "retries"), "the one permit granted before the cancel");
    });
  }

  @Test
  void retriesRunOutAsSpringsReactiveRetryEndsAndFailuresItWouldNotRetryAskNoPermit() {
    runner().run(context -> {
      Service service = context.getBean(Service.class);
      IOException notRetried = assertThrows(IOException.class, () -> blockChecked(service.notRetryable()));
      assertEquals("down 1", notRetried.getMessage());
      assertEquals(0, time.set.get());
      assertEquals(0, redisCount(context, "spend", "retries"), "no permit asked for a failure Spring would not retry");

      service.backend().calls.set(0);
      AtomicInteger ended = new AtomicInteger();
      List<Throwable> failure = new CopyOnWriteArrayList<>();
      service.spend().subscribe(v -> { }, e -> {
        failure.add(e);
        ended.incrementAndGet();
      });
      for (int retry = 1; retry <= 3; retry++) {
        time.awaitTimers(retry);
        time.advanceTimeBy(Duration.ofMillis(40));
      }
      assertEquals(1, ended.get());
      assertTrue(Exceptions.isRetryExhausted(failure.get(0)), failure.get(0).toString()); // Reactor's, as Spring ends
      assertEquals("down 4", failure.get(0).getCause().getMessage());
      assertEquals(3, redisCount(context, "spend", "retries"));
    });
  }

  @Test
  void methodsNamingNoBudgetUseRetryableBudgetOrRetryAsSpringAlone() {
    runner().run(context -> {
      Service service = context.getBean(Service.class);
      Throwable e = assertThrows(RuntimeException.class, () -> service.defaultBudget().block(BOUND));
      assertTrue(Exceptions.isRetryExhausted(e), e.toString()); // Spring's 2 retries, no budget
      assertEquals(3, service.backend().calls.get());
    });
    runner().withPropertyValues("retrybudget.retryable-budget=none").run(context -> {
      assertThat(context).hasNotFailed();
      Service service = context.getBean(Service.class);
      RetryBudgetExhaustedException e = assertThrows(RetryBudgetExhaustedException.class,
          () -> service.defaultBudget().block(BOUND));
      assertTrue(e.getMessage().startsWith("retry budget 'none'"), e.getMessage());
      assertEquals(1, service.backend().calls.get());
    });
  }

  /** {@code block()} wraps a checked failure; the failure itself. */
  private static <T> T blockChecked(Mono<T> mono) throws Exception {
    try {
      return mono.block(BOUND);
    } catch (RuntimeException e) {
      Throwable cause = Exceptions.unwrap(e);
      throw cause instanceof Exception checked ? checked : e;
    }
  }
}
