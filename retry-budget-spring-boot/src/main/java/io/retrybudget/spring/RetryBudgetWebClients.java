package io.retrybudget.spring;

import io.retrybudget.reactor.BudgetRetryFilter;
import java.util.List;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.web.reactive.function.client.ExchangeFilterFunction;
import org.springframework.web.reactive.function.client.WebClient;

/**
 * Gives the {@code WebClient} and {@code WebClient.Builder} beans named in
 * {@code retrybudget.clients.<client>.beans} that client's {@link BudgetRetryFilter}: a
 * {@code WebClient} is replaced by a copy of itself ({@code mutate()}) with the filter, a builder
 * gets it added. Any other retry budget filter it had (by hand, or from
 * {@code retrybudget.default-client}) is removed first, so an exchange is never retried by two
 * policies nor paid twice. Beans not named are left alone.
 */
final class RetryBudgetWebClients implements BeanPostProcessor {
  private final ObjectProvider<RetryBudgets> budgets;
  private final ObjectProvider<RetryBudgetWebClientFilters> filters;

  RetryBudgetWebClients(ObjectProvider<RetryBudgets> budgets, ObjectProvider<RetryBudgetWebClientFilters> filters) {
    this.budgets = budgets;
    this.filters = filters;
  }

  @Override
  public Object postProcessAfterInitialization(Object bean, String beanName) {
    if (!(bean instanceof WebClient || bean instanceof WebClient.Builder)) {
      return bean;
    }
    String client = budgets.getObject().clientOfBean().get(beanName);
    if (client == null) {
      return bean;
    }
    BudgetRetryFilter filter = filters.getObject().forClient(client);
    if (bean instanceof WebClient webClient) {
      return webClient.mutate().filters(list -> useOnly(list, filter)).build();
    }
    return ((WebClient.Builder) bean).filters(list -> useOnly(list, filter));
  }

  /** Removes every retry budget filter from {@code list}, then adds {@code filter} last (closest to the exchange). */
  static void useOnly(List<ExchangeFilterFunction> list, BudgetRetryFilter filter) {
    list.removeIf(f -> f instanceof BudgetRetryFilter);
    list.add(filter);
  }
}
