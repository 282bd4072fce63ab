package io.retrybudget.spring;

import io.retrybudget.budget.BudgetDecision;
import io.retrybudget.budget.RetryBudget;
import io.retrybudget.retry.RetryBudgetExhaustedException;
import java.lang.reflect.Method;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Consumer;
import org.aopalliance.intercept.MethodInvocation;
import org.reactivestreams.Publisher;
import org.springframework.core.ReactiveAdapter;
import org.springframework.resilience.retry.MethodRetryEvent;
import org.springframework.resilience.retry.MethodRetrySpec;
import org.springframework.util.ExceptionTypeFilter;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;
import reactor.util.retry.Retry;
import reactor.util.retry.RetryBackoffSpec;

/**
 * The reactive half of {@link BudgetedRetryAnnotationBeanPostProcessor}: the publisher a
 * {@code @Retryable} method returned, retried as Spring Framework 7 retries it (its
 * {@code AbstractRetryInterceptor}: Reactor's {@code Retry.backoff} with the annotation's
 * maxRetries, delay, jitter, multiplier and maxDelay, the includes / excludes / predicate as its
 * filter, {@code timeout} on the retried publisher, a {@link MethodRetryEvent} per failure and one
 * for the end), paid for by a budget: each subscription counts one first attempt, and the budget
 * is asked (never blocking) before each resubscription, after Reactor's filter and its
 * {@code maxRetries} accepted the failure and before the back-off timer is set. Refused: the
 * subscriber gets {@link RetryBudgetExhaustedException} at once (cause: the last failure), no timer.
 * Only loaded when such a method is called, so the processor itself needs no Reactor.
 */
final class ReactiveRetryables {
  private ReactiveRetryables() {}

  static Object retry(MethodInvocation invocation, Method method, Object result, ReactiveAdapter adapter,
      MethodRetrySpec spec, RetryBudget budget, Consumer<MethodRetryEvent> events) {
    Publisher<?> publisher = adapter.toPublisher(result);
    ExceptionTypeFilter types = new ExceptionTypeFilter(spec.includes(), spec.excludes());
    RetryBackoffSpec retry = Retry.backoff(spec.maxRetries(), spec.delay())
        .jitter(jitterFactor(spec))
        .multiplier(spec.multiplier())
        .maxBackoff(spec.maxDelay())
        // a refusal of a nested budgeted call is never retried, as on the imperative path
        .filter(failure -> !(failure instanceof RetryBudgetExhaustedException) && types.match(failure, true)
            && spec.predicate().shouldRetry(method, failure))
        .doBeforeRetryAsync(signal -> permit(budget, signal.failure()));
    Duration timeout = spec.timeout();
    boolean timeoutIsPositive = !timeout.isNegative() && !timeout.isZero();
    if (adapter.isMultiValue()) {
      Flux<?> flux = Flux.from(publisher)
          .doOnError(e -> events.accept(new MethodRetryEvent(invocation, e, false)))
          .retryWhen(retry);
      if (timeoutIsPositive) {
        flux = flux.timeout(timeout);
      }
      Flux<?> retried = flux.doOnError(e -> events.accept(new MethodRetryEvent(invocation, e, true)));
      return adapter.fromPublisher(Flux.defer(() -> {
        budget.recordFirstAttempt();
        return retried;
      }));
    }
    Mono<?> mono = Mono.from(publisher)
        .doOnError(e -> events.accept(new MethodRetryEvent(invocation, e, false)))
        .retryWhen(retry);
    if (timeoutIsPositive) {
      mono = mono.timeout(timeout);
    }
    Mono<?> retried = mono.doOnError(e -> events.accept(new MethodRetryEvent(invocation, e, true)));
    return adapter.fromPublisher(Mono.defer(() -> {
      budget.recordFirstAttempt();
      return retried;
    }));
  }

  /** Spring's own: the jitter as a fraction of the delay, within [0, 1]. */
  private static double jitterFactor(MethodRetrySpec spec) {
    return spec.delay().isZero() ? 0.0
        : Math.max(0.0, Math.min(1.0, spec.jitter().toNanos() / (double) spec.delay().toNanos()));
  }

  /**
   * Empty when the budget grants a retry, else {@link RetryBudgetExhaustedException}. A budget that
   * cannot answer is a refusal. An answer that comes later, on the budget's I/O thread, is handed to
   * Reactor's parallel scheduler (where Spring's back-off timers run): the method's publisher is
   * never resubscribed on Redis's thread.
   */
  private static Mono<Void> permit(RetryBudget budget, Throwable failure) {
    return Mono.defer(() -> {
      CompletableFuture<BudgetDecision> answer;
      try {
        answer = future(budget.acquire());
      } catch (RuntimeException e) {
        answer = CompletableFuture.completedFuture(BudgetDecision.DENIED_FALLBACK);
      }
      if (answer.isDone()) {
        BudgetDecision d = answer.isCompletedExceptionally() ? null : answer.getNow(null);
        return decide(budget, d, failure);
      }
      return Mono.fromFuture(answer, true) // a permit request is never cancelled: it may be shared
          .onErrorReturn(BudgetDecision.DENIED_FALLBACK)
          .defaultIfEmpty(BudgetDecision.DENIED_FALLBACK)
          .publishOn(Schedulers.parallel())
          .flatMap(d -> decide(budget, d, failure));
    });
  }

  private static CompletableFuture<BudgetDecision> future(CompletionStage<BudgetDecision> stage) {
    try {
      return stage.toCompletableFuture();
    } catch (UnsupportedOperationException notAFuture) {
      CompletableFuture<BudgetDecision> relay = new CompletableFuture<>();
      stage.whenComplete((d, error) -> relay.complete(error == null ? d : null));
      return relay;
    }
  }

  private static Mono<Void> decide(RetryBudget budget, BudgetDecision decision, Throwable failure) {
    BudgetDecision d = decision == null ? BudgetDecision.DENIED_FALLBACK : decision;
    return d.granted() ? Mono.empty() : Mono.error(new RetryBudgetExhaustedException(budget.name(), d, failure, null));
  }
}
