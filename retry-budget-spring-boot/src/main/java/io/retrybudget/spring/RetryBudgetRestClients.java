package io.retrybudget.spring;

import java.util.ArrayList;
import java.util.List;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.http.client.ClientHttpRequestInterceptor;
import org.springframework.web.client.RestClient;
import org.springframework.web.client.RestTemplate;

/**
 * Gives the {@code RestClient}, {@code RestTemplate} and {@code RestClient.Builder} beans named in
 * {@code retrybudget.clients.<client>.beans} that client's {@link RetryBudgetInterceptor}: a
 * {@code RestClient} is replaced by a copy of itself ({@code mutate()}) with the interceptor, a
 * {@code RestTemplate} or builder gets it added. Any other client's interceptor it had (by hand, or
 * from {@code retrybudget.default-client}) is removed first, so a call is never retried by two
 * policies nor paid twice. Beans not named are left alone.
 */
final class RetryBudgetRestClients implements BeanPostProcessor {
  private final ObjectProvider<RetryBudgets> budgets;
  private final ObjectProvider<RetryBudgetInterceptors> interceptors;

  RetryBudgetRestClients(ObjectProvider<RetryBudgets> budgets, ObjectProvider<RetryBudgetInterceptors> interceptors) {
    this.budgets = budgets;
    this.interceptors = interceptors;
  }

  @Override
  public Object postProcessAfterInitialization(Object bean, String beanName) {
    if (!(bean instanceof RestClient || bean instanceof RestTemplate || bean instanceof RestClient.Builder)) {
      return bean;
    }
    String client = budgets.getObject().clientOfBean().get(beanName);
    if (client == null) {
      return bean;
    }
    RetryBudgetInterceptor interceptor = interceptors.getObject().forClient(client);
    if (bean instanceof RestClient restClient) {
      return restClient.mutate().requestInterceptors(list -> useOnly(list, interceptor)).build();
    }
    if (bean instanceof RestClient.Builder builder) {
      return builder.requestInterceptors(list -> useOnly(list, interceptor));
    }
    RestTemplate template = (RestTemplate) bean;
    List<ClientHttpRequestInterceptor> list = new ArrayList<>(template.getInterceptors());
    useOnly(list, interceptor);
    template.setInterceptors(list);
    return template;
  }

  /** Removes every retry budget interceptor from {@code list}, then adds {@code interceptor} last. */
  static void useOnly(List<ClientHttpRequestInterceptor> list, RetryBudgetInterceptor interceptor) {
    list.removeIf(i -> i instanceof RetryBudgetInterceptor);
    list.add(interceptor);
  }
}
