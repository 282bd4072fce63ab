package io.retrybudget.spring;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import io.retrybudget.retry.RetryBudgetExhaustedException;
import io.retrybudget.retry.RetryExecutor;
import io.retrybudget.testing.RedisExtension;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.test.util.TestPropertyValues;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.resilience.annotation.EnableResilientMethods;
import org.springframework.resilience.annotation.Retryable;
import org.springframework.web.client.RestClient;

/**
 * Storms through the Spring integration alone: 50 application contexts (each its own
 * auto-configured RedisBudgetClient, budgets at ratio 0.10 with no floor), made once for both
 * tests. Through the interceptor: each calls a real HTTP server that answers 503 to everything, 3
 * attempts per call. Through {@code @Retryable}: each calls a method with 2 retries on a backend
 * that always fails. Either way the backend sees the fleet's retries stay near 10 % of its first
 * attempts (without the budget: 200 %).
 */
class RetryBudgetStormTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();
  private static final int CLIENTS = 50;
  private static final int CALLS_PER_CLIENT = 120;
  private static final long PERIOD_MILLIS = 16; // 50 clients: ~3,100 first attempts/s in all

  /** Every context's calls to the one backend that always fails. */
  static final LongAdder backendHits = new LongAdder();

  @Configuration(proxyBeanMethods = false)
  @EnableResilientMethods
  static class NoSleep {
    @Bean
    RetryExecutor.Sleeper noSleep() {
      return nanos -> { }; // the storm is about admission, not backoff
    }

    @Bean
    Backend backend() {
      return new Backend();
    }
  }

  /** Spring's own retry, 2 retries without delay, paid for by the fleet budget. */
  public static class Backend {
    @Retryable(maxRetries = 2, delay = 0)
    @FleetBudget("storm-retryable")
    public String call() throws IOException {
      backendHits.increment();
      throw new IOException("down");
    }
  }

  private static final List<AnnotationConfigApplicationContext> contexts = new ArrayList<>();

  @BeforeAll
  static void fiftyApplications() {
    redis.flushAll();
    for (int i = 0; i < CLIENTS; i++) {
      AnnotationConfigApplicationContext context = new AnnotationConfigApplicationContext();
      TestPropertyValues.of(
          "retrybudget.redis.uri=" + redis.uri(),
          "retrybudget.call-timeout=250ms", // a shared, loaded build machine: measure admission, not timeouts
          "retrybudget.budgets.storm.ratio=0.10",
          "retrybudget.budgets.storm.min-retries-per-second=0",
          "retrybudget.budgets.storm-retryable.ratio=0.10",
          "retrybudget.budgets.storm-retryable.min-retries-per-second=0",
          "retrybudget.clients.backend.budget=storm",
          "retrybudget.clients.backend.max-attempts=3").applyTo(context);
      context.register(RetryBudgetAutoConfiguration.class, NoSleep.class);
      context.refresh();
      contexts.add(context);
    }
  }

  @AfterAll
  static void closeThem() {
    contexts.forEach(AnnotationConfigApplicationContext::close);
  }

  /** Runs each call CALLS_PER_CLIENT times, every PERIOD_MILLIS; every call must end refused or run out. */
  private static String storm(List<Callable<?>> calls, LongAdder hits, Class<? extends Exception> ranOutType)
      throws InterruptedException {
    ScheduledExecutorService load = Executors.newScheduledThreadPool(8);
    LongAdder refused = new LongAdder();
    LongAdder ranOut = new LongAdder();
    try {
      CountDownLatch done = new CountDownLatch(CLIENTS * CALLS_PER_CLIENT);
      AtomicInteger first = new AtomicInteger();
      for (Callable<?> call : calls) {
        AtomicInteger made = new AtomicInteger();
        load.scheduleAtFixedRate(() -> {
          if (made.getAndIncrement() >= CALLS_PER_CLIENT) {
            return;
          }
          first.incrementAndGet();
          try {
            call.call();
            ranOut.increment(); // the interceptor: 3 attempts, the last 503 returned
          } catch (RetryBudgetExhaustedException e) {
            refused.increment();
          } catch (Exception e) {
            if (ranOutType.isInstance(e)) {
              ranOut.increment(); // 3 attempts, Spring's retries ran out
            }
          } finally {
            done.countDown();
          }
        }, 0, PERIOD_MILLIS, TimeUnit.MILLISECONDS);
      }
      assertTrue(done.await(90, TimeUnit.SECONDS), "the storm did not finish");
      long requests = first.get();
      long retries = hits.sum() - requests;
      double ratio = (double) retries / requests;
      String report = String.format("requests=%d retries=%d ratio=%.4f refused=%d ran-out=%d",
          requests, retries, ratio, refused.sum(), ranOut.sum());
      assertEquals((long) CLIENTS * CALLS_PER_CLIENT, requests);
      assertEquals(requests, refused.sum() + ranOut.sum(), report);
      assertTrue(ratio >= 0.05 && ratio <= 0.125, report);
      return report;
    } finally {
      load.shutdownNow();
      load.awaitTermination(5, TimeUnit.SECONDS);
    }
  }

  @Test
  void fiftyApplicationsKeepTheFleetNearTheRatio() throws Exception {
    LongAdder hits = new LongAdder();
    HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 200);
    ExecutorService serverThreads = Executors.newFixedThreadPool(8);
    server.setExecutor(serverThreads);
    server.createContext("/", exchange -> {
      hits.increment();
      exchange.getRequestBody().readAllBytes();
      exchange.sendResponseHeaders(503, -1);
      exchange.close();
    });
    server.start();
    try {
      List<Callable<?>> calls = new ArrayList<>();
      for (AnnotationConfigApplicationContext context : contexts) {
        RestClient client = RestClient.builder().baseUrl("http://127.0.0.1:" + server.getAddress().getPort())
            .requestInterceptor(context.getBean(RetryBudgetInterceptors.class).forClient("backend")).build();
        calls.add(() -> client.get().uri("/work").exchange((request, response) -> response.getStatusCode().value()));
      }
      System.out.println("spring storm: " + storm(calls, hits, IOException.class));
    } finally {
      server.stop(0);
      serverThreads.shutdownNow();
    }
  }

  @Test
  void fiftyApplicationsRetryingWithSpringsRetryableKeepTheFleetNearTheRatio() throws Exception {
    List<Callable<?>> calls = new ArrayList<>();
    for (AnnotationConfigApplicationContext context : contexts) {
      Backend backend = context.getBean(Backend.class);
      calls.add(backend::call);
    }
    System.out.println("spring @Retryable storm: " + storm(calls, backendHits, IOException.class));
  }
}
