package io.retrybudget.reactor;

import io.retrybudget.budget.BudgetDecision;
import io.retrybudget.retry.RetryListener;
import io.retrybudget.retry.RetryOutcome;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/** Every event a retry reports, in order, as short strings ("attempt 2", "retry 2 after 50ms", "outcome SUCCESS 2"). */
final class RecordingListener implements RetryListener {
  final List<String> events = new CopyOnWriteArrayList<>();

  @Override
  public void onAttempt(int attempt) {
    events.add("attempt " + attempt);
  }

  @Override
  public void onRetryScheduled(int nextAttempt, long delayNanos, Throwable failure) {
    events.add("retry " + nextAttempt + " after " + java.time.Duration.ofNanos(delayNanos).toMillis() + "ms");
  }

  @Override
  public void onBudgetDenied(BudgetDecision decision) {
    events.add("denied " + decision.reason().tag());
  }

  @Override
  public void onOutcome(RetryOutcome outcome, int attempts) {
    events.add("outcome " + outcome + " " + attempts);
  }

  List<String> outcomes() {
    return events.stream().filter(e -> e.startsWith("outcome")).toList();
  }
}
