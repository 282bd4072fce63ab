package io.retrybudget.spring;

import io.retrybudget.budget.redis.transport.RedisConnectionOptions;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The budgets' Redis from {@code retrybudget.redis.*}, which wins when set; {@code redis://localhost:6379}
 * when neither it nor the application's Redis says otherwise. A {@link RedisConnectionOptions} bean
 * of the application's own replaces both.
 */
@Configuration(proxyBeanMethods = false)
class PropertiesRedisConfiguration {
  @Bean
  @ConditionalOnMissingBean
  RedisConnectionOptions retryBudgetRedisConnection(RetryBudgetProperties properties) {
    return PropertyErrors.connectionOptions(properties);
  }
}
