package io.retrybudget.reactor;

import io.retrybudget.budget.RetryBudget;
import io.retrybudget.retry.RetryListener;
import io.retrybudget.retry.RetryPlanner;
import io.retrybudget.retry.RetryPolicy;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Consumer;
import java.util.function.DoubleSupplier;
import java.util.function.Function;
import java.util.function.LongSupplier;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;
import reactor.util.retry.Retry;

/**
 * A Reactor {@link Retry} paid for by the fleet-wide {@link RetryBudget}, deciding as the SDK's
 * {@code RetryExecutor} decides (through the same {@link RetryPlanner}): which failures are retried
 * (the policy's {@code retryOn}), the backoff with its jitter, the overall deadline (never slept
 * past, no attempt started that it cannot hold), the delay a server asked for (the policy's
 * {@code serverDelay}: wait at least that, or end now when it is beyond the cap or the time left),
 * idempotency. Each subscription is one call: its first attempt is counted in the budget once, the
 * budget is asked before every resubscription, and a refusal ends the call at once, without
 * sleeping, with {@link io.retrybudget.retry.RetryBudgetExhaustedException} carrying the last
 * failure. Timers are the scheduler's ({@link Schedulers#parallel()} by default, as Reactor's own
 * {@code Retry.backoff}); a cancelled subscriber disposes of the backoff timer, and nothing more is
 * asked of the budget.
 *
 * <pre>{@code
 * BudgetRetry retry = BudgetRetry.of(policy, payments);
 * Mono<String> body = webClient.get().uri("/x").retrieve().bodyToMono(String.class)
 *     .retryWhen(retry);                               // errors only, as any Retry
 * Mono<Item> item = retry.call(null, attempt -> fetch(attempt.attempt(), attempt.idempotencyKey()));
 * }</pre>
 *
 * <p>Two ways to use it:
 * <ul>
 * <li>{@code mono.retryWhen(retry)} (or {@code flux.retryWhen(retry)}): retries what the source
 *   signals as errors. The per-attempt timeout is not applied (add your own {@code timeout}); a
 *   non-idempotent policy never retries (no call here carries an idempotency key). Reactor tells a
 *   {@code Retry} nothing when its source succeeds: {@code retryWhen} cancels the companion both
 *   when the source completes and when the subscriber cancels. So a call that succeeded, or was
 *   cancelled while an attempt ran, reports no {@link RetryListener#onOutcome} (one cancelled while
 *   it slept or waited for the budget reports {@code CANCELLED}); every other event is reported.</li>
 * <li>{@link #call}/{@link #apply}: the whole call, exactly as the executor runs it: results are
 *   judged too (the policy's {@code retryOnResult}; when retries run out the last result is the
 *   answer), each attempt is cut by the attempt timeout and by the deadline, its attempts know
 *   their number, deadline and idempotency key, and every call reports its outcome once (what
 *   {@code SuccessAwareBudget.listener()} and metrics listeners need).</li>
 * </ul>
 */
public final class BudgetRetry extends Retry {
  final RetryPolicy policy;
  final RetryPlanner planner;
  final RetryBudget budget;
  final Scheduler scheduler;
  final LongSupplier nanoClock;
  final DoubleSupplier random;
  final SafeListeners listeners;
  private final Consumer<Object> discard;

  private BudgetRetry(Builder b) {
    this.policy = b.policy;
    this.planner = new RetryPlanner(b.policy);
    this.budget = b.budget;
    this.scheduler = b.scheduler;
    this.nanoClock = b.nanoClock;
    this.random = b.random;
    this.listeners = new SafeListeners(b.listeners);
    this.discard = b.discard;
  }

  /** The policy's retries, each paid for by {@code budget}; the defaults of {@link Builder} otherwise. */
  public static BudgetRetry of(RetryPolicy policy, RetryBudget budget) {
    return builder(policy).budget(budget).build();
  }

  public static Builder builder(RetryPolicy policy) {
    return new Builder(policy);
  }

  public RetryPolicy policy() {
    return policy;
  }

  /** One call per subscription of {@code retryWhen}: counts its first attempt, then decides after every failure. */
  @Override
  public Publisher<?> generateCompanion(Flux<RetrySignal> retrySignals) {
    return new ReactiveCall(this, null).generateCompanion(retrySignals);
  }

  /**
   * {@code source} run as a call of this retry (see {@link #call}): {@code mono.transform(retry::apply)}.
   * Each retry subscribes to {@code source} again.
   */
  public <T> Mono<T> apply(Mono<T> source) {
    Objects.requireNonNull(source, "source must not be null");
    return call(null, attempt -> source);
  }

  /**
   * A call whose attempts {@code attempt} makes, one per subscription: told their number, their
   * deadline and the call's idempotency key ({@code ownKey}, or one made when an attempt first asks
   * for it). A result the policy retries is retried, and is the answer when retries run out; a
   * retried result is handed to the discard action (a response's body released) before the next
   * attempt. An attempt is cut (cancelled, failing with {@code AttemptTimeoutException}) when the
   * attempt timeout or the deadline runs out. Cancelling the subscription stops everything: the
   * attempt in flight, the backoff timer, the budget asked nothing more.
   */
  public <T> Mono<T> call(String ownKey, Function<ReactiveAttempt, ? extends Mono<T>> attempt) {
    Objects.requireNonNull(attempt, "attempt must not be null");
    return Mono.defer(() -> {
      ReactiveCall call = new ReactiveCall(this, ownKey);
      return Mono.defer(() -> call.attempt(attempt))
          .retryWhen(call)
          .onErrorResume(AttemptSignal.class, s -> Mono.just(result(s)))
          .doOnSuccess(v -> call.end(io.retrybudget.retry.RetryOutcome.SUCCESS))
          .doOnCancel(call::cancelled);
    });
  }

  @SuppressWarnings("unchecked")
  private static <T> T result(AttemptSignal s) {
    return (T) s.value; // a RESULT signal: the companion ends the call with the others' causes
  }

  void discard(Object value) {
    if (discard != null && value != null) {
      try {
        discard.accept(value);
      } catch (RuntimeException ignored) {
        // giving back a result's resources must not change the call
      }
    }
  }

  /** Validates every value as it is set; {@link #build()} copies them, so a built retry never changes. */
  public static final class Builder {
    private final RetryPolicy policy;
    private RetryBudget budget;
    private Scheduler scheduler = Schedulers.parallel();
    private LongSupplier nanoClock = System::nanoTime;
    private DoubleSupplier random = () -> ThreadLocalRandom.current().nextDouble();
    private final List<RetryListener> listeners = new ArrayList<>(1);
    private Consumer<Object> discard;

    private Builder(RetryPolicy policy) {
      this.policy = Objects.requireNonNull(policy, "policy must not be null");
    }

    /** Counts each call's first attempt and is asked before every retry; none by default (retries unpaid). */
    public Builder budget(RetryBudget budget) {
      this.budget = Objects.requireNonNull(budget, "budget must not be null");
      return this;
    }

    /**
     * Where backoff timers and attempt timeouts run, and where a budget answer that arrives on
     * another thread is handed to; {@link Schedulers#parallel()} by default. With a
     * {@code VirtualTimeScheduler} give its clock to {@link #nanoClock} too.
     */
    public Builder scheduler(Scheduler scheduler) {
      this.scheduler = Objects.requireNonNull(scheduler, "scheduler must not be null");
      return this;
    }

    /** The monotonic clock the deadline is measured on ({@code System::nanoTime} by default). */
    public Builder nanoClock(LongSupplier nanoClock) {
      this.nanoClock = Objects.requireNonNull(nanoClock, "nanoClock must not be null");
      return this;
    }

    /** Uniform random numbers in [0, 1) for the jitter. */
    public Builder random(DoubleSupplier random) {
      this.random = Objects.requireNonNull(random, "random must not be null");
      return this;
    }

    /** Adds a listener (repeatable); each is isolated: what it throws is logged once and changes nothing. */
    public Builder listener(RetryListener listener) {
      Objects.requireNonNull(listener, "listener must not be null");
      if (listener != RetryListener.NONE) {
        listeners.add(listener);
      }
      return this;
    }

    /** Gives back what a retried result holds (the WebClient filter releases a response's body). */
    Builder discard(Consumer<Object> discard) {
      this.discard = Objects.requireNonNull(discard, "discard must not be null");
      return this;
    }

    public BudgetRetry build() {
      return new BudgetRetry(this);
    }
  }
}
