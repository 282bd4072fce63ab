package io.retrybudget.spring;

import io.retrybudget.budget.RetryBudget;
import io.retrybudget.retry.RetryBudgetExhaustedException;
import java.lang.reflect.Method;
import java.time.Duration;
import java.time.temporal.ChronoUnit;
import java.util.Arrays;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Future;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.springframework.aop.PointcutAdvisor;
import org.springframework.aop.ProxyMethodInvocation;
import org.springframework.aop.support.AopUtils;
import org.springframework.aop.support.DefaultPointcutAdvisor;
import org.springframework.context.ApplicationEventPublisher;
import org.springframework.core.MethodClassKey;
import org.springframework.core.ReactiveAdapter;
import org.springframework.core.ReactiveAdapterRegistry;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.core.retry.RetryException;
import org.springframework.core.retry.RetryListener;
import org.springframework.core.retry.RetryPolicy;
import org.springframework.core.retry.RetryState;
import org.springframework.format.annotation.DurationFormat;
import org.springframework.format.datetime.standard.DurationFormatterUtils;
import org.springframework.resilience.annotation.RetryAnnotationBeanPostProcessor;
import org.springframework.resilience.annotation.Retryable;
import org.springframework.resilience.retry.MethodRetryEvent;
import org.springframework.resilience.retry.MethodRetryPredicate;
import org.springframework.resilience.retry.MethodRetrySpec;
import org.springframework.util.ClassUtils;
import org.springframework.util.ReflectionUtils;
import org.springframework.util.StringUtils;
import org.springframework.util.StringValueResolver;

/**
 * Spring Framework 7's {@link RetryAnnotationBeanPostProcessor} with fleet budgets: a
 * {@code @Retryable} method paid for by a budget ({@link FleetBudget}, or the default budget) runs
 * in a {@link BudgetedRetryTemplate} built from its annotation exactly as Spring builds its own
 * (includes, excludes, predicate, maxRetries, timeout, delay, jitter, multiplier, maxDelay, the
 * {@code *String} forms and placeholders, {@link MethodRetryEvent}s); so the budget is asked just
 * before each retry Spring would make, after the policy accepted the failure and its back-off
 * granted one more, and before the sleep. Refused: {@link RetryBudgetExhaustedException} at once
 * (cause: the last failure). A method returning a reactive type ({@code Mono}, {@code Flux}, any
 * type of Spring's {@link ReactiveAdapterRegistry}) is retried as Spring retries it, with Reactor's
 * {@code Retry.backoff} on the publisher it returned, and paid for the same way: each subscription
 * counts one first attempt, the budget is asked (without blocking) before each resubscription, and
 * a refusal fails the subscriber at once. Methods without a budget go to Spring's own interceptor
 * unchanged.
 *
 * <p>The Spring Boot starter puts it in place of the processor {@code @EnableResilientMethods}
 * registers (keeping its {@code proxyTargetClass} and {@code order}). Without Boot, register it as
 * a bean yourself instead of {@code @EnableResilientMethods}'s.
 *
 * <p>Every budget name is checked when the bean is made: an unknown one fails the start, naming the
 * method and the budgets there are.
 */
@SuppressWarnings("serial")
public class BudgetedRetryAnnotationBeanPostProcessor extends RetryAnnotationBeanPostProcessor {
  /** Where the budgets come from; asked when a bean with {@code @Retryable} methods is made. */
  public interface Budgets {
    /** The budget of this name; an unknown name is an {@link IllegalArgumentException}. */
    RetryBudget budget(String name);

    /** The budget of {@code @Retryable} methods that name none, or null: those retry without one. */
    String defaultBudget();
  }

  private static final boolean REACTIVE_STREAMS_PRESENT = ClassUtils.isPresent(
      "org.reactivestreams.Publisher", BudgetedRetryAnnotationBeanPostProcessor.class.getClassLoader());
  // Spring's reactive retry is Reactor's: without it, such methods are left to Spring as they are
  private static final boolean REACTOR_PRESENT = ClassUtils.isPresent(
      "reactor.util.retry.Retry", BudgetedRetryAnnotationBeanPostProcessor.class.getClassLoader());

  private final transient BudgetedInterceptor interceptor;

  public BudgetedRetryAnnotationBeanPostProcessor(Budgets budgets) {
    Objects.requireNonNull(budgets, "budgets must not be null");
    PointcutAdvisor spring = (PointcutAdvisor) Objects.requireNonNull(this.advisor, "Spring's retry advisor");
    this.interceptor = new BudgetedInterceptor(budgets, (MethodInterceptor) spring.getAdvice());
    this.advisor = new DefaultPointcutAdvisor(spring.getPointcut(), interceptor);
  }

  @Override
  public void setEmbeddedValueResolver(StringValueResolver resolver) {
    super.setEmbeddedValueResolver(resolver);
    interceptor.valueResolver = resolver;
  }

  @Override
  public void setApplicationEventPublisher(ApplicationEventPublisher publisher) {
    super.setApplicationEventPublisher(publisher);
    interceptor.publisher = publisher;
  }

  @Override
  public Object postProcessAfterInitialization(Object bean, String beanName) {
    Object result = super.postProcessAfterInitialization(bean, beanName);
    if (result != bean) { // advised: resolve every @Retryable method now, so a wrong name fails the start
      Class<?> targetClass = AopUtils.getTargetClass(bean);
      ReflectionUtils.doWithMethods(targetClass, method -> interceptor.plan(method, targetClass),
          method -> !ReflectionUtils.isObjectMethod(method)
              && (AnnotatedElementUtils.hasAnnotation(method, Retryable.class)
                  || AnnotatedElementUtils.hasAnnotation(targetClass, Retryable.class)));
    }
    return result;
  }

  /** What one method runs with; NONE: Spring's own interceptor. {@code reactive}: its return type's adapter, or null. */
  private record Plan(MethodRetrySpec spec, RetryPolicy policy, RetryBudget budget, Method method, String methodName,
      ReactiveAdapter reactive) {
    static final Plan NONE = new Plan(null, null, null, null, null, null);
  }

  private final class BudgetedInterceptor implements MethodInterceptor {
    private final Budgets budgets;
    private final MethodInterceptor spring;
    private final Map<MethodClassKey, Plan> plans = new ConcurrentHashMap<>();
    private volatile StringValueResolver valueResolver;
    private volatile ApplicationEventPublisher publisher;

    BudgetedInterceptor(Budgets budgets, MethodInterceptor spring) {
      this.budgets = budgets;
      this.spring = spring;
    }

    @Override
    public Object invoke(MethodInvocation invocation) throws Throwable {
      Method method = invocation.getMethod();
      Object target = invocation.getThis();
      Plan plan = plan(method, target != null ? target.getClass() : method.getDeclaringClass());
      if (plan == Plan.NONE) {
        return spring.invoke(invocation);
      }
      if (plan.reactive() != null) { // as Spring: the method runs once, its publisher is resubscribed
        Object result = invocation.proceed();
        return result == null ? null : ReactiveRetryables.retry(invocation, plan.method(), result, plan.reactive(),
            plan.spec(), plan.budget(), this::publish);
      }
      BudgetedRetryTemplate template = new BudgetedRetryTemplate(plan.policy(), plan.budget());
      template.setRetryListener(new RetryListener() {
        @Override
        public void onRetryableExecution(RetryPolicy policy, org.springframework.core.retry.Retryable<?> retryable,
            RetryState state) {
          if (!state.isSuccessful()) {
            publish(new MethodRetryEvent(invocation, state.getLastException(), false));
          }
        }
      });
      try {
        return template.execute(new org.springframework.core.retry.Retryable<Object>() {
          @Override
          public Object execute() throws Throwable {
            return invocation instanceof ProxyMethodInvocation pmi ? pmi.invocableClone().proceed() : invocation.proceed();
          }

          @Override
          public String getName() {
            return plan.methodName();
          }
        });
      } catch (RetryException e) {
        publish(new MethodRetryEvent(invocation, e, true));
        throw e.getCause();
      } catch (RetryBudgetExhaustedException e) {
        publish(new MethodRetryEvent(invocation, e, true));
        throw e;
      }
    }

    private void publish(MethodRetryEvent event) {
      ApplicationEventPublisher p = publisher;
      if (p != null) {
        p.publishEvent(event);
      }
    }

    Plan plan(Method method, Class<?> targetClass) {
      MethodClassKey key = new MethodClassKey(method, targetClass);
      Plan plan = plans.get(key);
      if (plan == null) {
        plan = resolve(method, targetClass);
        Plan raced = plans.putIfAbsent(key, plan);
        plan = raced != null ? raced : plan;
      }
      return plan;
    }

    private Plan resolve(Method invoked, Class<?> targetClass) {
      // a JDK proxy invokes the interface's method: the annotations may be on the class's
      Method method = AopUtils.getMostSpecificMethod(invoked, targetClass);
      Retryable retryable = AnnotatedElementUtils.findMergedAnnotation(method, Retryable.class);
      if (retryable == null) {
        retryable = AnnotatedElementUtils.findMergedAnnotation(targetClass, Retryable.class);
      }
      ReactiveAdapter reactive = reactiveAdapter(method);
      if (retryable == null || (reactive != null && !REACTOR_PRESENT)) {
        return Plan.NONE;
      }
      FleetBudget fleet = AnnotatedElementUtils.findMergedAnnotation(method, FleetBudget.class);
      if (fleet == null) {
        fleet = AnnotatedElementUtils.findMergedAnnotation(targetClass, FleetBudget.class);
      }
      String name = fleet != null ? fleet.value() : budgets.defaultBudget();
      if (name == null) {
        return Plan.NONE;
      }
      String methodName = ClassUtils.getQualifiedMethodName(method, targetClass);
      RetryBudget budget;
      try {
        budget = budgets.budget(name);
      } catch (IllegalArgumentException e) {
        throw new IllegalStateException("@FleetBudget of " + methodName + ": " + e.getMessage());
      }
      ChronoUnit unit = retryable.timeUnit().toChronoUnit();
      MethodRetrySpec spec = new MethodRetrySpec(
          Arrays.asList(retryable.includes()), Arrays.asList(retryable.excludes()),
          predicate(retryable.predicate()),
          parseLong(retryable.maxRetries(), retryable.maxRetriesString()),
          parseDuration(retryable.timeout(), retryable.timeoutString(), unit),
          parseDuration(retryable.delay(), retryable.delayString(), unit),
          parseDuration(retryable.jitter(), retryable.jitterString(), unit),
          parseDouble(retryable.multiplier(), retryable.multiplierString()),
          parseDuration(retryable.maxDelay(), retryable.maxDelayString(), unit));
      RetryPolicy policy = RetryPolicy.builder() // Spring's AbstractRetryInterceptor builds the same from the spec
          .includes(spec.includes())
          .excludes(spec.excludes())
          .predicate(spec.predicate().forMethod(method))
          .maxRetries(spec.maxRetries())
          .timeout(spec.timeout())
          .delay(spec.delay())
          .jitter(spec.jitter())
          .multiplier(spec.multiplier())
          .maxDelay(spec.maxDelay())
          .build();
      return new Plan(spec, policy, budget, method, methodName, reactive);
    }

    /** As Spring decides a method is reactive: a type of the shared adapter registry, not a Future. */
    private ReactiveAdapter reactiveAdapter(Method method) {
      return REACTIVE_STREAMS_PRESENT && !Future.class.isAssignableFrom(method.getReturnType())
          ? ReactiveAdapterRegistry.getSharedInstance().getAdapter(method.getReturnType()) : null;
    }

    private MethodRetryPredicate predicate(Class<? extends MethodRetryPredicate> type) {
      if (type == MethodRetryPredicate.class) {
        return (method, failure) -> true;
      }
      try {
        return beanFactory != null ? beanFactory.createBean(type)
            : ReflectionUtils.accessibleConstructor(type).newInstance();
      } catch (Throwable e) {
        throw new IllegalStateException("Failed to instantiate predicate class [" + type + "]", e);
      }
    }

    private String resolved(String value) {
      StringValueResolver r = valueResolver;
      return StringUtils.hasText(value) && r != null ? r.resolveStringValue(value) : value;
    }

    private long parseLong(long value, String text) {
      String s = resolved(text);
      return StringUtils.hasText(s) ? Long.parseLong(s) : value;
    }

    private double parseDouble(double value, String text) {
      String s = resolved(text);
      return StringUtils.hasText(s) ? Double.parseDouble(s) : value;
    }

    private Duration parseDuration(long value, String text, ChronoUnit unit) {
      String s = resolved(text);
      return StringUtils.hasText(s)
          ? DurationFormatterUtils.detectAndParse(s, DurationFormat.Unit.fromChronoUnit(unit))
          : Duration.of(value, unit);
    }
  }
}
