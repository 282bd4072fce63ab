package io.retrybudget.spring;

import io.retrybudget.budget.redis.transport.RedisConnectionOptions;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.boot.data.redis.autoconfigure.DataRedisConnectionDetails;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Configuration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * With {@code retrybudget.redis.uri} and {@code cluster-nodes} unset and one (or one primary)
 * {@link LettuceConnectionFactory} in the application: the budgets' Redis is the application's, on
 * its Lettuce resources ({@link ApplicationRedisConnection}). The factory is injected, so the
 * budgets' client, which depends on these options, is closed before the factory and its resources.
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnClass(name = {"org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory",
    "org.springframework.boot.data.redis.autoconfigure.DataRedisConnectionDetails"})
@Conditional(RetryBudgetRedisUnset.class)
class ApplicationRedisConfiguration {
  @Bean
  @ConditionalOnMissingBean
  @ConditionalOnSingleCandidate(LettuceConnectionFactory.class)
  RedisConnectionOptions retryBudgetRedisConnection(LettuceConnectionFactory factory,
      ObjectProvider<DataRedisConnectionDetails> details) {
    return ApplicationRedisConnection.options(factory, details.getIfAvailable());
  }
}
