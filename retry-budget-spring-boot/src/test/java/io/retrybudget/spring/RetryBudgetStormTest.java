package io.retrybudget.spring;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import io.retrybudget.retry.RetryBudgetExhaustedException;
import io.retrybudget.retry.RetryExecutor;
import io.retrybudget.testing.RedisExtension;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.test.util.TestPropertyValues;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.web.client.RestClient;

/**
 * A storm through the Spring integration alone: 50 application contexts (each its own
 * auto-configured RedisBudgetClient and interceptor, one budget: ratio 0.10, no floor), each
 * calling a real HTTP server that answers 503 to everything, 3 attempts per call. The server sees
 * the fleet's retries stay near 10 % of its first attempts (without the budget: 200 %).
 */
class RetryBudgetStormTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();
  private static final int CLIENTS = 50;
  private static final int CALLS_PER_CLIENT = 120;
  private static final long PERIOD_MILLIS = 16; // 50 clients: ~3,100 first attempts/s in all

  @Configuration(proxyBeanMethods = false)
  static class NoSleep {
    @Bean
    RetryExecutor.Sleeper noSleep() {
      return nanos -> { }; // the storm is about admission, not backoff
    }
  }

  @Test
  void fiftyApplicationsKeepTheFleetNearTheRatio() throws Exception {
    redis.flushAll();
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
    List<AnnotationConfigApplicationContext> contexts = new ArrayList<>();
    ScheduledExecutorService load = Executors.newScheduledThreadPool(8);
    LongAdder refused = new LongAdder();
    LongAdder ranOut = new LongAdder();
    try {
      List<RestClient> clients = new ArrayList<>();
      for (int i = 0; i < CLIENTS; i++) {
        AnnotationConfigApplicationContext context = new AnnotationConfigApplicationContext();
        TestPropertyValues.of(
            "retrybudget.redis.uri=" + redis.uri(),
            "retrybudget.call-timeout=250ms", // a shared, loaded build machine: measure admission, not timeouts
            "retrybudget.budgets.storm.ratio=0.10",
            "retrybudget.budgets.storm.min-retries-per-second=0",
            "retrybudget.clients.backend.budget=storm",
            "retrybudget.clients.backend.max-attempts=3").applyTo(context);
        context.register(RetryBudgetAutoConfiguration.class, NoSleep.class);
        context.refresh();
        contexts.add(context);
        clients.add(RestClient.builder().baseUrl("http://127.0.0.1:" + server.getAddress().getPort())
            .requestInterceptor(context.getBean(RetryBudgetInterceptors.class).forClient("backend")).build());
      }
      CountDownLatch done = new CountDownLatch(CLIENTS * CALLS_PER_CLIENT);
      AtomicInteger first = new AtomicInteger();
      for (RestClient client : clients) {
        AtomicInteger calls = new AtomicInteger();
        load.scheduleAtFixedRate(() -> {
          if (calls.getAndIncrement() >= CALLS_PER_CLIENT) {
            return;
          }
          first.incrementAndGet();
          try {
            client.get().uri("/work").exchange((request, response) -> response.getStatusCode().value());
            ranOut.increment(); // 3 attempts, the last 503 returned
          } catch (RetryBudgetExhaustedException e) {
            refused.increment();
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
      System.out.println("spring storm: " + report);
      assertEquals((long) CLIENTS * CALLS_PER_CLIENT, requests);
      assertTrue(ratio >= 0.05 && ratio <= 0.125, report);
    } finally {
      load.shutdownNow();
      load.awaitTermination(5, TimeUnit.SECONDS);
      contexts.forEach(AnnotationConfigApplicationContext::close);
      server.stop(0);
      serverThreads.shutdownNow();
    }
  }
}
