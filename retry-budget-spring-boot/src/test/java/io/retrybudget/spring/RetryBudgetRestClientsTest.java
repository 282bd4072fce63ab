package io.retrybudget.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.lettuce.core.RedisURI;
import io.lettuce.core.resource.ClientResources;
import io.retrybudget.budget.redis.protocol.BudgetKeys;
import io.retrybudget.budget.redis.transport.RedisConnectionOptions;
import io.retrybudget.retry.RetryExecutor;
import io.retrybudget.testing.RedisExtension;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;
import org.springframework.data.redis.core.StringRedisTemplate;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.web.client.HttpClientErrorException;
import org.springframework.web.client.HttpServerErrorException;
import org.springframework.web.client.RestClient;
import org.springframework.web.client.RestTemplate;

/**
 * One real application (embedded Tomcat on a random port) whose Redis is given only as
 * {@code spring.data.redis.*}, configured by the README's {@code readme/rest-clients.yaml}: RestClient and RestTemplate beans named in
 * {@code retrybudget.clients.payments.beans} retry with that client's policy, every builder Spring
 * Boot hands out gets {@code retrybudget.default-client}'s, other clients are left alone, and the
 * budgets live in the application's Redis on its Lettuce resources.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, classes = RetryBudgetRestClientsTest.App.class,
    properties = {"spring.config.import=classpath:readme/rest-clients.yaml", "retrybudget.call-timeout=500ms"})
class RetryBudgetRestClientsTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();

  @DynamicPropertySource
  static void applicationRedis(DynamicPropertyRegistry registry) {
    registry.add("spring.data.redis.host", () -> RedisURI.create(redis.uri()).getHost());
    registry.add("spring.data.redis.port", () -> RedisURI.create(redis.uri()).getPort());
  }

  static final List<Long> WAITS = new CopyOnWriteArrayList<>();

  @SpringBootConfiguration
  @EnableAutoConfiguration
  static class App {
    @Bean
    RetryExecutor.Sleeper recordingSleeper() {
      return WAITS::add;
    }

    @Bean
    RetryBudgetWebTest.Backend backend() {
      return new RetryBudgetWebTest.Backend();
    }

    // README:begin
    @Bean
    RestClient paymentsClient(RestClient.Builder builder) {   // Boot's builder: the default client's
      return builder.build();                                 // interceptor, replaced by payments'
    }

    @Bean
    RestTemplate paymentsTemplate() {
      return new RestTemplate();
    }
    // README:end

    /** Not named and not from Boot's builder: left alone. */
    @Bean
    RestClient plainClient() {
      return RestClient.builder().build();
    }
  }

  @LocalServerPort int port;
  @Autowired RetryBudgetWebTest.Backend backend;
  @Autowired @Qualifier("paymentsClient") RestClient paymentsClient;
  @Autowired @Qualifier("paymentsTemplate") RestTemplate paymentsTemplate;
  @Autowired @Qualifier("plainClient") RestClient plainClient;
  @Autowired RestClient.Builder bootBuilder;
  @Autowired RedisConnectionOptions connection;
  @Autowired ClientResources applicationResources;
  @Autowired StringRedisTemplate applicationRedis;

  private String url(String path) {
    return "http://localhost:" + port + path;
  }

  @BeforeEach
  void clear() {
    WAITS.clear();
    backend.attemptHeaders.clear();
  }

  @Test
  void aNamedRestClientRetriesWithItsClientsPolicyAndOnlyThat() {
    assertEquals("ok n1", paymentsClient.get().uri(url("/flaky/n1/2")).retrieve().body(String.class));
    assertEquals(List.of("1", "2", "3"), backend.attemptHeaders);
    assertEquals(2, WAITS.size());
  }

  @Test
  void aNamedRestClientKeepsNoOtherClientsInterceptor() {
    // payments' 3 attempts all fail; with the default client's interceptor left around it, its second
    // attempt would run payments' 3 again and the 4th call would succeed
    assertThrows(HttpServerErrorException.ServiceUnavailable.class,
        () -> paymentsClient.get().uri(url("/flaky/n2/3")).retrieve().body(String.class));
    assertEquals(3, backend.calls.get("n2").get());
  }

  @Test
  void aNamedRestTemplateGetsItsClientsInterceptor() {
    assertEquals("ok t1", paymentsTemplate.getForObject(url("/flaky/t1/2"), String.class));
    assertEquals(List.of("1", "2", "3"), backend.attemptHeaders);
  }

  @Test
  void everyBuilderBootHandsOutGetsTheDefaultClient() {
    RestClient client = bootBuilder.build();
    assertThrows(HttpServerErrorException.ServiceUnavailable.class,
        () -> client.get().uri(url("/flaky/d1/5")).retrieve().body(String.class));
    assertEquals(List.of("1", "2"), backend.attemptHeaders, "the default client's 2 attempts");
  }

  @Test
  void aClientNeitherNamedNorFromBootsBuilderIsLeftAlone() {
    // the backend requires X-Retry-Attempt, which only the interceptor sends
    assertThrows(HttpClientErrorException.BadRequest.class,
        () -> plainClient.get().uri(url("/flaky/p1/1")).retrieve().body(String.class));
    assertTrue(backend.attemptHeaders.isEmpty());
  }

  @Test
  void theBudgetsLiveInTheApplicationsRedisOnItsLettuceResources() {
    assertSame(applicationResources, connection.clientResources());
    assertEquals(RedisURI.create(redis.uri()).getPort(), connection.uris().get(0).getPort());
    assertEquals("ok r1", paymentsClient.get().uri(url("/flaky/r1/1")).retrieve().body(String.class));
    assertTrue(applicationRedis.hasKey(new BudgetKeys("backend").config()), "seeded by the budget in the application's Redis");
  }

  @Test
  void aBeanUnderTwoClientsOrAnUnknownDefaultClientFailsTheStart() {
    ApplicationContextRunner runner = new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(RetryBudgetAutoConfiguration.class))
        .withPropertyValues("retrybudget.redis.uri=" + redis.uri(), "retrybudget.budgets.b.ratio=0.1",
            "retrybudget.clients.one.budget=b", "retrybudget.clients.two.budget=b");
    runner.withPropertyValues("retrybudget.clients.one.beans=shared", "retrybudget.clients.two.beans=shared")
        .run(context -> assertThat(context.getStartupFailure()).rootCause()
            .hasMessage("retrybudget.clients.two.beans: bean 'shared' is already under retrybudget.clients.one.beans"));
    runner.withPropertyValues("retrybudget.default-client=three")
        .run(context -> assertThat(context.getStartupFailure()).rootCause()
            .hasMessage("retrybudget.default-client: no client 'three' under retrybudget.clients [one, two]"));
  }
}
