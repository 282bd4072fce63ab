package io.retrybudget.reactor;

import java.util.function.Function;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.core.publisher.Mono;
import reactor.core.publisher.MonoOperator;
import reactor.util.context.Context;

/**
 * An attempt whose result the policy judges once it has completed: an accepted result is passed on,
 * a retried one becomes the error {@code retryWhen} listens to. Unlike {@code handle} or
 * {@code flatMap} into an error, it never cancels the attempt after its result arrived, and passes
 * no cancel upstream once the attempt has ended ({@code retryWhen} cancels the ended attempt when
 * the call ends with an error): a WebClient exchange cancelled after its response releases that
 * response's body, and the response may still be the call's answer (retries run out) or be read by
 * the caller.
 */
final class JudgedAttempt<T> extends MonoOperator<T, T> {
  private final Function<Object, Throwable> judge;

  /** @param judge null for a result passed on, else the error that carries it to the retry */
  JudgedAttempt(Mono<? extends T> attempt, Function<Object, Throwable> judge) {
    super(attempt);
    this.judge = judge;
  }

  @Override
  public void subscribe(CoreSubscriber<? super T> actual) {
    source.subscribe(new Judging<>(actual, judge));
  }

  private static final class Judging<T> implements CoreSubscriber<T>, Subscription {
    private final CoreSubscriber<? super T> actual;
    private final Function<Object, Throwable> judge;
    private Subscription upstream;
    private T value;
    private volatile boolean ended;

    Judging(CoreSubscriber<? super T> actual, Function<Object, Throwable> judge) {
      this.actual = actual;
      this.judge = judge;
    }

    @Override
    public Context currentContext() {
      return actual.currentContext();
    }

    @Override
    public void onSubscribe(Subscription s) {
      upstream = s;
      actual.onSubscribe(this);
    }

    @Override
    public void onNext(T t) {
      value = t; // a Mono: one value, then onComplete
    }

    @Override
    public void onError(Throwable t) {
      ended = true;
      actual.onError(t);
    }

    @Override
    public void onComplete() {
      ended = true;
      T v = value;
      value = null;
      if (v == null) {
        actual.onComplete();
        return;
      }
      Throwable retried = judge.apply(v);
      if (retried == null) {
        actual.onNext(v);
        actual.onComplete();
      } else {
        actual.onError(retried);
      }
    }

    @Override
    public void request(long n) {
      upstream.request(n);
    }

    @Override
    public void cancel() {
      if (!ended) {
        upstream.cancel();
      }
    }
  }
}
