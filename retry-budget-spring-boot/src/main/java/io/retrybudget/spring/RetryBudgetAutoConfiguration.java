package io.retrybudget.spring;

import io.micrometer.core.instrument.MeterRegistry;
import io.retrybudget.budget.RedisBudgetClient;
import io.retrybudget.budget.redis.transport.RedisConnectionOptions;
import io.retrybudget.reactor.BudgetRetryFilter;
import io.retrybudget.retry.RetryExecutor;
import java.time.Clock;
import java.time.Duration;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.restclient.RestClientCustomizer;
import org.springframework.boot.webclient.WebClientCustomizer;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;

/**
 * Fleet-wide retry budgets from {@code retrybudget.*}: the {@link RedisBudgetClient} (one per
 * application, closed on shutdown) on the Redis of {@code retrybudget.redis.*} when set, else on the
 * application's own ({@code LettuceConnectionFactory}, its Lettuce resources), {@link RetryBudgets} (budgets by name, executors by client
 * name), {@link RetryBudgetInterceptors} for RestClient / RestTemplate when spring-web is present,
 * {@link RetryBudgetWebClientFilters} for WebClient when spring-webflux and retry-budget-reactor are,
 * Micrometer metrics when the application has a MeterRegistry, and the actuator endpoint
 * {@code retrybudgets} and health indicator {@code retryBudget} when the actuator is present.
 *
 * <p>A {@link RetryExecutor.Sleeper} bean, if any, replaces the sleeping of the executors and
 * interceptors (for tests on fake time).
 */
@AutoConfiguration(afterName = "org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration")
@ConditionalOnClass(RedisBudgetClient.class)
@ConditionalOnProperty(prefix = "retrybudget", name = "enabled", matchIfMissing = true)
@EnableConfigurationProperties(RetryBudgetProperties.class)
// in this order: the application's Redis, when it applies, before retrybudget.redis.* and its default
@Import({ApplicationRedisConfiguration.class, PropertiesRedisConfiguration.class})
public class RetryBudgetAutoConfiguration {
  /** Bound on each read of the actuator endpoint and health indicator. */
  static final Duration STATUS_TIMEOUT = Duration.ofSeconds(1);
  private static final String WEB_CLIENT = "org.springframework.web.reactive.function.client.WebClient";
  private static final String BUDGET_RETRY_FILTER = "io.retrybudget.reactor.BudgetRetryFilter";

  @Bean(destroyMethod = "close")
  @ConditionalOnMissingBean
  RedisBudgetClient retryBudgetRedisClient(RetryBudgetProperties properties, RedisConnectionOptions connection) {
    return PropertyErrors.client(properties, connection);
  }

  @Bean(destroyMethod = "close")
  @ConditionalOnMissingBean
  RetryBudgets retryBudgets(RedisBudgetClient client, RetryBudgetProperties properties,
      ObjectProvider<RetryBudgetMetricsSupport> metrics, ObjectProvider<RetryExecutor.Sleeper> sleeper) {
    return new RetryBudgets(client, properties, metrics.getIfAvailable(() -> RetryBudgetMetricsSupport.NONE),
        sleeper.getIfAvailable());
  }

  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "org.springframework.http.client.ClientHttpRequestInterceptor")
  static class HttpInterceptors {
    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean
    RetryBudgetInterceptors retryBudgetInterceptors(RetryBudgets budgets, ObjectProvider<RetryBudgetMetricsSupport> metrics,
        ObjectProvider<RetryExecutor.Sleeper> sleeper) {
      return new RetryBudgetInterceptors(budgets, metrics.getIfAvailable(() -> RetryBudgetMetricsSupport.NONE),
          sleeper.getIfAvailable(), Clock.systemUTC());
    }

    /** The interceptor of a client on the beans named in its {@code beans}; resolved when such a bean is made. */
    @Bean
    static RetryBudgetRestClients retryBudgetRestClients(ObjectProvider<RetryBudgets> budgets,
        ObjectProvider<RetryBudgetInterceptors> interceptors) {
      return new RetryBudgetRestClients(budgets, interceptors);
    }
  }

  /** {@code retrybudget.default-client}: its interceptor on every RestClient.Builder Spring Boot hands out. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = {"org.springframework.boot.restclient.RestClientCustomizer",
      "org.springframework.http.client.ClientHttpRequestInterceptor"})
  @ConditionalOnProperty(prefix = "retrybudget", name = "default-client")
  static class DefaultRestClient {
    @Bean
    @ConditionalOnMissingBean(name = "retryBudgetRestClientCustomizer")
    RestClientCustomizer retryBudgetRestClientCustomizer(RetryBudgetInterceptors interceptors, RetryBudgets budgets) {
      RetryBudgetInterceptor interceptor = interceptors.forClient(budgets.defaultClient());
      return builder -> builder.requestInterceptors(list -> RetryBudgetRestClients.useOnly(list, interceptor));
    }
  }

  /** WebClient: a client's filter on the beans named in its {@code beans}, when spring-webflux and retry-budget-reactor are present. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = {WEB_CLIENT, BUDGET_RETRY_FILTER})
  static class WebClientFilters {
    @Bean
    @ConditionalOnMissingBean
    RetryBudgetWebClientFilters retryBudgetWebClientFilters(RetryBudgets budgets,
        ObjectProvider<RetryBudgetMetricsSupport> metrics) {
      return new RetryBudgetWebClientFilters(budgets, metrics.getIfAvailable(() -> RetryBudgetMetricsSupport.NONE),
          Clock.systemUTC());
    }

    /** The filter of a client on the WebClient beans named in its {@code beans}; resolved when such a bean is made. */
    @Bean
    static RetryBudgetWebClients retryBudgetWebClients(ObjectProvider<RetryBudgets> budgets,
        ObjectProvider<RetryBudgetWebClientFilters> filters) {
      return new RetryBudgetWebClients(budgets, filters);
    }
  }

  /** {@code retrybudget.default-client}: its filter on every WebClient.Builder Spring Boot hands out. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = {"org.springframework.boot.webclient.WebClientCustomizer", WEB_CLIENT, BUDGET_RETRY_FILTER})
  @ConditionalOnProperty(prefix = "retrybudget", name = "default-client")
  static class DefaultWebClient {
    @Bean
    @ConditionalOnMissingBean(name = "retryBudgetWebClientCustomizer")
    WebClientCustomizer retryBudgetWebClientCustomizer(RetryBudgetWebClientFilters filters, RetryBudgets budgets) {
      BudgetRetryFilter filter = filters.forClient(budgets.defaultClient());
      return builder -> builder.filters(list -> RetryBudgetWebClients.useOnly(list, filter));
    }
  }

  /** {@code @Retryable} methods paid for by budgets, when the application has {@code @EnableResilientMethods}. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "org.springframework.resilience.annotation.RetryAnnotationBeanPostProcessor")
  static class Retryables {
    @Bean
    static RetryableBudgetRegistrar retryBudgetRetryableRegistrar() {
      return new RetryableBudgetRegistrar();
    }
  }

  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "io.micrometer.core.instrument.MeterRegistry")
  static class Metrics {
    /** Resolved when the budgets are made: the application's registry if it defines one. */
    @Bean
    RetryBudgetMetricsSupport retryBudgetMetrics(ObjectProvider<MeterRegistry> registry) {
      return new RetryBudgetMetricsSupport() {
        private RetryBudgetMetricsSupport delegate() {
          MeterRegistry r = registry.getIfAvailable();
          return r == null ? RetryBudgetMetricsSupport.NONE : new MicrometerRetryBudgetMetrics(r);
        }

        @Override
        public io.retrybudget.retry.RetryListener listener(String client) {
          return delegate().listener(client);
        }

        @Override
        public void monitor(io.retrybudget.budget.RetryBudget budget) {
          delegate().monitor(budget);
        }
      };
    }
  }

  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = {"org.springframework.boot.actuate.endpoint.annotation.Endpoint",
      "org.springframework.boot.health.contributor.HealthIndicator"})
  static class Actuator {
    @Bean(destroyMethod = "close")
    RetryBudgetStatus retryBudgetStatus(RetryBudgets budgets, RedisConnectionOptions connection) {
      return new RetryBudgetStatus(connection, budgets.configs(), STATUS_TIMEOUT);
    }

    @Bean
    @ConditionalOnMissingBean
    RetryBudgetsEndpoint retryBudgetsEndpoint(RedisBudgetClient client, RetryBudgets budgets, RetryBudgetStatus status) {
      return new RetryBudgetsEndpoint(client, budgets, status);
    }

    @Bean(name = "retryBudgetHealthIndicator")
    @ConditionalOnMissingBean(name = "retryBudgetHealthIndicator")
    RetryBudgetHealthIndicator retryBudgetHealthIndicator(RedisBudgetClient client, RetryBudgets budgets,
        RetryBudgetStatus status) {
      return new RetryBudgetHealthIndicator(client, budgets, status);
    }
  }
}
