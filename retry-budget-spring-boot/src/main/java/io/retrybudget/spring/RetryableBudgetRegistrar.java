package io.retrybudget.spring;

import io.retrybudget.budget.RetryBudget;
import org.springframework.beans.BeansException;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.annotation.AnnotatedBeanDefinition;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.beans.factory.support.BeanDefinitionRegistry;
import org.springframework.beans.factory.support.BeanDefinitionRegistryPostProcessor;
import org.springframework.beans.factory.support.RootBeanDefinition;
import org.springframework.core.annotation.AnnotationAttributes;
import org.springframework.resilience.annotation.EnableResilientMethods;

/**
 * Puts {@link BudgetedRetryAnnotationBeanPostProcessor} in place of the retry processor that
 * {@code @EnableResilientMethods} registers, with the same {@code proxyTargetClass} and
 * {@code order}; does nothing when the application has not enabled resilient methods.
 */
final class RetryableBudgetRegistrar implements BeanDefinitionRegistryPostProcessor {
  /** The bean name Spring's {@code ResilientMethodsConfiguration} gives its retry processor. */
  static final String PROCESSOR = "org.springframework.resilience.annotation.internalRetryAnnotationProcessor";

  @Override
  public void postProcessBeanDefinitionRegistry(BeanDefinitionRegistry registry) throws BeansException {
    if (!registry.containsBeanDefinition(PROCESSOR) || !(registry instanceof BeanFactory factory)) {
      return;
    }
    AnnotationAttributes enable = enableResilientMethods(registry);
    RootBeanDefinition replacement = new RootBeanDefinition(BudgetedRetryAnnotationBeanPostProcessor.class, () -> {
      BudgetedRetryAnnotationBeanPostProcessor processor =
          new BudgetedRetryAnnotationBeanPostProcessor(new ContextBudgets(factory));
      if (enable != null) {
        processor.setProxyTargetClass(enable.getBoolean("proxyTargetClass"));
        processor.setOrder(enable.<Integer>getNumber("order"));
      }
      return processor;
    });
    replacement.setRole(BeanDefinition.ROLE_INFRASTRUCTURE);
    registry.removeBeanDefinition(PROCESSOR);
    registry.registerBeanDefinition(PROCESSOR, replacement);
  }

  @Override
  public void postProcessBeanFactory(ConfigurableListableBeanFactory beanFactory) {
  }

  private static AnnotationAttributes enableResilientMethods(BeanDefinitionRegistry registry) {
    for (String name : registry.getBeanDefinitionNames()) {
      if (registry.getBeanDefinition(name) instanceof AnnotatedBeanDefinition annotated) {
        AnnotationAttributes attributes = AnnotationAttributes.fromMap(
            annotated.getMetadata().getAnnotationAttributes(EnableResilientMethods.class.getName()));
        if (attributes != null) {
          return attributes;
        }
      }
    }
    return null;
  }

  /** The context's {@link RetryBudgets}, looked up when a {@code @Retryable} bean is made. */
  private record ContextBudgets(BeanFactory factory) implements BudgetedRetryAnnotationBeanPostProcessor.Budgets {
    @Override
    public RetryBudget budget(String name) {
      return factory.getBean(RetryBudgets.class).budget(name);
    }

    @Override
    public String defaultBudget() {
      return factory.getBean(RetryBudgets.class).retryableBudget();
    }
  }
}
