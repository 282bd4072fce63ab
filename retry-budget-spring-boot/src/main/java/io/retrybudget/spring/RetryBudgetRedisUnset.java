package io.retrybudget.spring;

import org.springframework.boot.autoconfigure.condition.ConditionOutcome;
import org.springframework.boot.autoconfigure.condition.SpringBootCondition;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.core.type.AnnotatedTypeMetadata;

/**
 * Matches when neither {@code retrybudget.redis.uri} nor {@code retrybudget.redis.cluster-nodes} is
 * set (in any of Spring Boot's relaxed forms, e.g. {@code RETRYBUDGET_REDIS_URI}): the budgets may
 * then use the application's own Redis.
 */
final class RetryBudgetRedisUnset extends SpringBootCondition {
  @Override
  public ConditionOutcome getMatchOutcome(ConditionContext context, AnnotatedTypeMetadata metadata) {
    Binder binder = Binder.get(context.getEnvironment());
    if (binder.bind("retrybudget.redis.uri", String.class).isBound()) {
      return ConditionOutcome.noMatch("retrybudget.redis.uri is set");
    }
    if (binder.bind("retrybudget.redis.cluster-nodes", Bindable.listOf(String.class)).map(l -> !l.isEmpty()).orElse(false)) {
      return ConditionOutcome.noMatch("retrybudget.redis.cluster-nodes is set");
    }
    return ConditionOutcome.match("retrybudget.redis.uri and retrybudget.redis.cluster-nodes are not set");
  }
}
