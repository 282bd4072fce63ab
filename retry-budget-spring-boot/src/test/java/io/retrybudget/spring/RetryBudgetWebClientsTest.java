package io.retrybudget.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.reactor.BudgetRetryFilter;
import io.retrybudget.retry.RetryBudgetExhaustedException;
import io.retrybudget.testing.RedisExtension;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.boot.webclient.WebClientCustomizer;
import org.springframework.context.annotation.Bean;
import org.springframework.http.ResponseEntity;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.reactive.function.client.ClientResponse;
import org.springframework.web.reactive.function.client.WebClient;
import org.springframework.web.reactive.function.client.WebClientResponseException;

/**
 * One real application (embedded Tomcat on a random port serving the backend, Reactor Netty's
 * WebClient calling it) configured by the README's {@code readme/web-clients.yaml}, against a real
 * Redis: WebClient beans named in {@code retrybudget.clients.orders.beans} retry with that client's
 * filter only, every builder Spring Boot hands out gets {@code retrybudget.default-client}'s, retries
 * are counted by Redis, a refusal ends the exchange at once, other clients are left alone.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, classes = RetryBudgetWebClientsTest.App.class,
    properties = {"spring.config.import=classpath:readme/web-clients.yaml", "retrybudget.call-timeout=1s",
        // no permit ever: ratio x a handful of first attempts rounds down to 0, and no floor
        "retrybudget.budgets.closed.ratio=0.000001", "retrybudget.budgets.closed.min-retries-per-second=0",
        "retrybudget.clients.strict.budget=closed", "retrybudget.clients.strict.max-attempts=3",
        // an hour between attempts: a refusal that slept first would not answer within the test's bound
        "retrybudget.clients.strict.backoff-base=1h", "retrybudget.clients.strict.backoff-cap=1h"})
class RetryBudgetWebClientsTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();
  private static final Duration BOUND = Duration.ofSeconds(20);

  @DynamicPropertySource
  static void redisUri(DynamicPropertyRegistry registry) {
    registry.add("retrybudget.redis.uri", redis::uri);
  }

  @SpringBootConfiguration
  @EnableAutoConfiguration
  static class App {
    @Bean
    Backend backend() {
      return new Backend();
    }

    // README:begin
    @Bean
    WebClient ordersWebClient(WebClient.Builder builder) {   // Boot's builder: the default client's
      return builder.build();                                // filter, replaced by orders'
    }
    // README:end

    /** Not named and not from Boot's builder: left alone. */
    @Bean
    WebClient plainWebClient() {
      return WebClient.create();
    }
  }

  /** Answers 503 to the first {@code failures} calls of each id, then 200; records X-Retry-Attempt. */
  @RestController
  static class Backend {
    final Map<String, AtomicInteger> calls = new ConcurrentHashMap<>();
    final List<String> attemptHeaders = new CopyOnWriteArrayList<>();

    @GetMapping("/orders/{id}/{failures}")
    ResponseEntity<String> order(@PathVariable String id, @PathVariable int failures,
        @RequestHeader(name = "X-Retry-Attempt", required = false) String attempt) {
      attemptHeaders.add(String.valueOf(attempt));
      if (calls.computeIfAbsent(id, k -> new AtomicInteger()).incrementAndGet() <= failures) {
        return ResponseEntity.status(503).body("busy");
      }
      return ResponseEntity.ok("ok " + id);
    }
  }

  @LocalServerPort int port;
  @Autowired Backend backend;
  @Autowired @Qualifier("ordersWebClient") WebClient ordersWebClient;
  @Autowired @Qualifier("plainWebClient") WebClient plainWebClient;
  @Autowired WebClient.Builder bootBuilder;
  @Autowired RetryBudgetWebClientFilters filters;
  @Autowired RetryBudgets budgets;
  @Autowired RetryBudgetStatus status;

  private String url(String path) {
    return "http://localhost:" + port + path;
  }

  private String get(WebClient client, String path) {
    return client.get().uri(url(path)).retrieve().bodyToMono(String.class).block(BOUND);
  }

  /** The retries Redis has granted to {@code budget} in its window (the whole fleet's count). */
  private long redisRetries(String budget) {
    Object retries = status.status(budget, budgets.budget(budget)).get("retries");
    assertInstanceOf(Number.class, retries, "Redis answered: " + retries);
    return ((Number) retries).longValue();
  }

  @BeforeEach
  void clear() {
    backend.attemptHeaders.clear();
  }

  @Test
  void aNamedWebClientRetriesWithItsClientsFilterAndRedisCountsTheRetries() {
    long before = redisRetries("orders-api");
    assertEquals("ok w1", get(ordersWebClient, "/orders/w1/2"));
    assertEquals(List.of("1", "2", "3"), backend.attemptHeaders, "orders' 3 attempts");
    assertEquals(before + 2, redisRetries("orders-api"), "each retry granted by Redis, counted there");
  }

  @Test
  void aNamedWebClientKeepsNoOtherClientsFilter() {
    // orders' 3 attempts all fail; with the default client's filter left around it, its second
    // attempt would run orders' 3 again and the 4th call would succeed
    assertThrows(WebClientResponseException.ServiceUnavailable.class, () -> get(ordersWebClient, "/orders/w2/3"));
    assertEquals(3, backend.calls.get("w2").get());
  }

  @Test
  void everyBuilderBootHandsOutGetsTheDefaultClient() {
    WebClient client = bootBuilder.build();
    assertThrows(WebClientResponseException.ServiceUnavailable.class, () -> get(client, "/orders/d1/5"));
    assertEquals(List.of("1", "2"), backend.attemptHeaders, "the default client's 2 attempts");
  }

  @Test
  void aWebClientNeitherNamedNorFromBootsBuilderIsLeftAlone() {
    assertThrows(WebClientResponseException.ServiceUnavailable.class, () -> get(plainWebClient, "/orders/p1/1"));
    assertEquals(List.of("null"), backend.attemptHeaders, "one attempt, no X-Retry-Attempt");
  }

  @Test
  void aRefusedRetryEndsTheExchangeAtOnceWithTheBudgetsError() {
    WebClient strict = WebClient.builder().filter(filters.forClient("strict")).build();
    RetryBudgetExhaustedException refused = assertThrows(RetryBudgetExhaustedException.class,
        () -> get(strict, "/orders/s1/5"));
    assertTrue(refused.getMessage().startsWith("retry budget 'closed'"), refused.getMessage());
    ClientResponse last = assertInstanceOf(ClientResponse.class, refused.lastResult());
    assertEquals(503, last.statusCode().value());
    assertEquals(1, backend.calls.get("s1").get(), "refused before the second attempt, and without its hour of backoff");
    assertSame(filters.forClient("strict"), filters.forClient("strict"));
  }

  @Test
  void unknownNamesFailAsForRestClients() {
    IllegalArgumentException unknown = assertThrows(IllegalArgumentException.class, () -> filters.forClient("ordrs"));
    assertEquals("no retry client 'ordrs' under retrybudget.clients; configured: [strict, orders, defaults]",
        unknown.getMessage());
    ApplicationContextRunner runner = new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(RetryBudgetAutoConfiguration.class))
        .withPropertyValues("retrybudget.redis.uri=" + redis.uri(), "retrybudget.budgets.b.ratio=0.1",
            "retrybudget.clients.one.budget=b", "retrybudget.clients.two.budget=b");
    runner.withPropertyValues("retrybudget.clients.one.beans=sharedWebClient", "retrybudget.clients.two.beans=sharedWebClient")
        .run(context -> assertThat(context.getStartupFailure()).rootCause()
            .hasMessage("retrybudget.clients.two.beans: bean 'sharedWebClient' is already under retrybudget.clients.one.beans"));
    runner.withPropertyValues("retrybudget.default-client=three")
        .run(context -> assertThat(context.getStartupFailure()).rootCause()
            .hasMessage("retrybudget.default-client: no client 'three' under retrybudget.clients [one, two]"));
  }

  @Test
  void withoutRetryBudgetReactorThereIsNoWebClientFilterAndTheStartSucceeds() {
    ApplicationContextRunner runner = new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(RetryBudgetAutoConfiguration.class))
        .withPropertyValues("retrybudget.redis.uri=" + redis.uri(), "retrybudget.budgets.b.ratio=0.1",
            "retrybudget.clients.one.budget=b", "retrybudget.default-client=one");
    runner.run(context -> {
      assertThat(context).hasNotFailed().hasSingleBean(RetryBudgetWebClientFilters.class)
          .hasBean("retryBudgetWebClientCustomizer").hasBean("retryBudgetWebClients");
      assertInstanceOf(WebClientCustomizer.class, context.getBean("retryBudgetWebClientCustomizer"));
    });
    runner.withClassLoader(new FilteredClassLoader(BudgetRetryFilter.class)).run(context ->
        assertThat(context).hasNotFailed().doesNotHaveBean(RetryBudgetWebClientFilters.class)
            .doesNotHaveBean("retryBudgetWebClientCustomizer").doesNotHaveBean("retryBudgetWebClients")
            .hasBean("retryBudgetRestClientCustomizer"));
    runner.withClassLoader(new FilteredClassLoader(WebClient.class)).run(context ->
        assertThat(context).hasNotFailed().doesNotHaveBean(RetryBudgetWebClientFilters.class)
            .doesNotHaveBean("retryBudgetWebClientCustomizer"));
  }
}
