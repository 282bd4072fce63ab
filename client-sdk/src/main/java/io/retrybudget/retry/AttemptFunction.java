package io.retrybudget.retry;

/** One attempt of a call, told which attempt it is. */
@FunctionalInterface
public interface AttemptFunction<T> {
  T apply(AttemptContext context) throws Exception;
}
