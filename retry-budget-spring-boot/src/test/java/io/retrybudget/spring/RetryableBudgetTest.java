package io.retrybudget.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.retry.RetryBudgetExhaustedException;
import io.retrybudget.testing.RedisExtension;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.ApplicationListener;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.retry.RetryException;
import org.springframework.core.retry.RetryPolicy;
import org.springframework.resilience.annotation.EnableResilientMethods;
import org.springframework.resilience.annotation.Retryable;
import org.springframework.resilience.retry.MethodRetryEvent;

/**
 * Spring Framework 7's {@code @Retryable} and {@code RetryTemplate} paid for by fleet budgets, in
 * real application contexts (the starter's auto-configuration plus {@code @EnableResilientMethods})
 * against a real Redis. Budgets (paced admission): {@code spend} holds at most 4 permits, refilled
 * by its floor at 8 a second (the balance's cap is half a second of its rate; its ratio adds
 * nothing), {@code none} allows none.
 */
class RetryableBudgetTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();

  /** A backend that fails its first {@code failures} calls (all of them when negative). */
  public static class Backend {
    final AtomicInteger calls = new AtomicInteger();
    volatile int failures = -1;

    String call() throws IOException {
      int n = calls.incrementAndGet();
      if (failures < 0 || n <= failures) {
        throw new IOException("down " + n);
      }
      return "ok after " + n;
    }
  }

  /** The application's service: Spring's annotations, the budget named with {@link FleetBudget}. */
  public static class Service {
    private final Backend backend = new Backend();

    public Backend backend() { // through the proxy (its own fields are not the target's)
      return backend;
    }

    @Retryable(maxRetries = 3, delay = 40)
    @FleetBudget("spend")
    public String spend() throws IOException {
      return backend.call();
    }

    // an hour between attempts: a refusal that slept first would hang the test
    @Retryable(maxRetries = 3, delay = 3_600_000)
    @FleetBudget("none")
    public String refusedAtOnce() throws IOException {
      return backend.call();
    }

    @Retryable(maxRetries = 2, delay = 0)
    public String defaultBudget() throws IOException {
      return backend.call();
    }

    @Retryable(maxRetries = 3, delay = 0, includes = IllegalStateException.class)
    @FleetBudget("spend")
    public String notRetryable() throws IOException {
      return backend.call();
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

  /** A bean behind an interface: a JDK proxy, whose invocations name the interface's method. */
  public interface Charges {
    String charge() throws IOException;
  }

  public static class ChargesImpl implements Charges {
    final Backend backend = new Backend();

    @Override
    @Retryable(maxRetries = 3, delay = 3_600_000)
    @FleetBudget("none")
    public String charge() throws IOException {
      return backend.call();
    }
  }

  @Configuration(proxyBeanMethods = false)
  @EnableResilientMethods
  static class InterfaceApp {
    @Bean
    Charges charges() {
      return new ChargesImpl();
    }
  }

  public static class Misnamed {
    @Retryable
    @FleetBudget("paymnts")
    public void call() {
    }
  }

  @Configuration(proxyBeanMethods = false)
  @EnableResilientMethods
  static class MisnamedApp {
    @Bean
    Misnamed misnamed() {
      return new Misnamed();
    }
  }

  private ApplicationContextRunner runner() {
    return new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(RetryBudgetAutoConfiguration.class))
        .withPropertyValues(
            "retrybudget.redis.uri=" + redis.uri(),
            "retrybudget.call-timeout=1s", // a loaded build machine: the answers are Redis's, not the fallback's
            // a balance of 4 permits at most, refilled at 8 a second whatever the first attempts
            "retrybudget.budgets.spend.ratio=0.000001",
            "retrybudget.budgets.spend.min-retries-per-second=8",
            "retrybudget.budgets.spend.window-seconds=10",
            "retrybudget.budgets.none.ratio=0.000001",
            "retrybudget.budgets.none.min-retries-per-second=0");
  }

  @BeforeEach
  void emptyRedis() {
    redis.flushAll();
  }

  @Test
  void retryableMethodsRetryWhileTheBudgetGrantsThenFailFastWithTheLastFailure() {
    runner().withUserConfiguration(App.class).run(context -> {
      assertThat(context).hasNotFailed();
      Service service = context.getBean(Service.class);
      assertInstanceOf(BudgetedRetryAnnotationBeanPostProcessor.class,
          context.getBean(RetryableBudgetRegistrar.PROCESSOR));

      service.backend().failures = 2;
      long start = System.nanoTime();
      assertEquals("ok after 3", service.spend()); // two retries granted, each after Spring's 40 ms
      assertTrue(System.nanoTime() - start >= Duration.ofMillis(80).toNanos(), "Spring's back-off was skipped");

      service.backend().failures = -1;
      service.backend().calls.set(0);
      int calls = 0;
      RetryBudgetExhaustedException refused = null;
      while (refused == null && calls < 20) {
        calls++;
        try {
          service.spend();
        } catch (IOException ranOut) {
          assertEquals("down " + service.backend().calls.get(), ranOut.getMessage()); // 3 retries, then Spring's end
        } catch (RetryBudgetExhaustedException e) {
          refused = e;
        }
      }
      // 3 retries a call every 120 ms spend faster than 8 a second refill: refused within a few calls
      assertTrue(refused != null, "the budget never refused");
      assertTrue(refused.getMessage().startsWith("retry budget 'spend'"), refused.getMessage());
      assertInstanceOf(IOException.class, refused.getCause());
      assertEquals("down " + service.backend().calls.get(), refused.getCause().getMessage());

      // exhausted: one attempt, then the refusal, for every call
      int before = service.backend().calls.get();
      assertThrows(RetryBudgetExhaustedException.class, service::spend);
      assertEquals(before + 1, service.backend().calls.get());

      List<MethodRetryEvent> aborted = context.getBean(App.class).events.stream()
          .filter(MethodRetryEvent::isRetryAborted).toList();
      assertInstanceOf(RetryBudgetExhaustedException.class, aborted.get(aborted.size() - 1).getFailure());
    });
  }

  @Test
  void aRefusalDoesNotWaitForSpringsBackOff() {
    runner().withUserConfiguration(App.class).run(context -> {
      Service service = context.getBean(Service.class);
      RetryBudgetExhaustedException e = assertTimeoutPreemptively(Duration.ofSeconds(20), () ->
          assertThrows(RetryBudgetExhaustedException.class, service::refusedAtOnce));
      assertEquals(1, service.backend().calls.get());
      assertTrue(e.getMessage().startsWith("retry budget 'none'"), e.getMessage());
      assertEquals("down 1", e.getCause().getMessage());
    });
  }

  @Test
  void failuresSpringWouldNotRetryAskNoPermit() {
    runner().withUserConfiguration(App.class).run(context -> {
      Service service = context.getBean(Service.class);
      assertThrows(IOException.class, service::notRetryable); // excluded by includes: not retried, no permit
      assertEquals(1, service.backend().calls.get());
      for (int call = 0; call < 3; call++) { // had they spent permits, the balance of 4 would be down to 1
        assertThrows(IOException.class, service::notRetryable);
      }
      assertEquals(4, service.backend().calls.get());
      service.backend().calls.set(0);
      // all three of Spring's retries granted: notRetryable spent none
      IOException ranOut = assertThrows(IOException.class, service::spend);
      assertEquals("down 4", ranOut.getMessage());
    });
  }

  @Test
  void methodsNamingNoBudgetUseRetryableBudgetOrRetryAsSpringAlone() {
    runner().withUserConfiguration(App.class).run(context -> {
      Service service = context.getBean(Service.class);
      assertThrows(IOException.class, service::defaultBudget); // no default budget: Spring's 2 retries
      assertEquals(3, service.backend().calls.get());
    });
    runner().withUserConfiguration(App.class).withPropertyValues("retrybudget.retryable-budget=none").run(context -> {
      Service service = context.getBean(Service.class);
      RetryBudgetExhaustedException e = assertThrows(RetryBudgetExhaustedException.class, service::defaultBudget);
      assertTrue(e.getMessage().startsWith("retry budget 'none'"), e.getMessage());
      assertEquals(1, service.backend().calls.get());
    });
  }

  @Test
  void annotationsOnTheClassOfAnInterfaceProxiedBeanAreFound() {
    runner().withUserConfiguration(InterfaceApp.class).run(context -> {
      Charges charges = context.getBean(Charges.class);
      assertTrue(java.lang.reflect.Proxy.isProxyClass(charges.getClass()), charges.getClass().getName());
      assertTimeoutPreemptively(Duration.ofSeconds(20), () ->
          assertThrows(RetryBudgetExhaustedException.class, charges::charge));
    });
  }

  @Test
  void aWrongBudgetNameFailsTheStart() {
    runner().withUserConfiguration(MisnamedApp.class).run(context -> {
      assertThat(context).hasFailed();
      assertThat(context.getStartupFailure()).rootCause()
          .hasMessageContaining("@FleetBudget of io.retrybudget.spring.RetryableBudgetTest$Misnamed.call")
          .hasMessageContaining("no retry budget 'paymnts'").hasMessageContaining("[spend, none]");
    });
    runner().withUserConfiguration(App.class).withPropertyValues("retrybudget.retryable-budget=nne").run(context ->
        assertThat(context.getStartupFailure()).rootCause()
            .hasMessage("retrybudget.retryable-budget: no budget 'nne' under retrybudget.budgets [spend, none]"));
  }

  @Test
  void aRetryTemplateOnTheContextsBudget() {
    runner().run(context -> {
      RetryBudgets budgets = context.getBean(RetryBudgets.class);
      Backend backend = new Backend();
      BudgetedRetryTemplate spend = new BudgetedRetryTemplate(
          RetryPolicy.builder().maxRetries(4).delay(Duration.ofMillis(1)).build(), budgets.budget("spend"));
      RetryException ranOut = assertThrows(RetryException.class, () -> spend.execute(backend::call));
      assertEquals(5, backend.calls.get());
      assertEquals("down 5", ranOut.getCause().getMessage());

      BudgetedRetryTemplate none = new BudgetedRetryTemplate(
          RetryPolicy.builder().maxRetries(4).delay(Duration.ofHours(1)).build(), budgets.budget("none"));
      RetryBudgetExhaustedException e = assertTimeoutPreemptively(Duration.ofSeconds(20), () ->
          assertThrows(RetryBudgetExhaustedException.class, () -> none.execute(backend::call)));
      assertEquals(6, backend.calls.get());
      assertEquals("down 6", e.getCause().getMessage());
    });
  }
}
