package io.retrybudget.budget;

import java.util.concurrent.atomic.LongAdder;

/**
 * Counts one budget has not sent to Redis yet: first attempts, local refusals and the fallback's
 * grants since the last call (recorded without a lock: a successful first attempt is one increment),
 * and those of calls Redis did not apply, sent again with the next one.
 */
final class PendingCounts {
  private final LongAdder requests = new LongAdder();
  private final LongAdder denied = new LongAdder();
  // retries the fallback granted, reported to Redis with the next call (and resent like the others)
  private final LongAdder retries = new LongAdder();
  // counts Redis did not apply (a stale or missing reply): sent again with the next call, and already
  // in the budget's own window (so not recorded there a second time)
  private final LongAdder resendRequests = new LongAdder();
  private final LongAdder resendDenied = new LongAdder();
  private final LongAdder resendRetries = new LongAdder();

  /**
   * What one call takes: the new first attempts and refusals (to be put in the own window) and what
   * the call sends, the new counts plus those sent again.
   */
  record Taken(long newRequests, long newDenied, long requests, long denied, long retries) {}

  void firstAttempt() {
    requests.increment();
  }

  void denied() {
    denied.increment();
  }

  void fallbackGrant() {
    retries.increment();
  }

  /** First attempts recorded and not yet taken. */
  long requests() {
    return requests.sum();
  }

  /** Refusals recorded and not yet taken. */
  long denials() {
    return denied.sum();
  }

  boolean any() {
    return requests.sum() > 0 || denied.sum() > 0 || retries.sum() > 0
        || resendRequests.sum() > 0 || resendDenied.sum() > 0 || resendRetries.sum() > 0;
  }

  /** Takes everything for one call (the caller holds the own window's lock, see {@link LocalFallback#take}). */
  Taken take() {
    long r = requests.sumThenReset();
    long d = denied.sumThenReset();
    return new Taken(r, d, r + resendRequests.sumThenReset(), d + resendDenied.sumThenReset(),
        retries.sumThenReset() + resendRetries.sumThenReset());
  }

  /**
   * Counts that go with the next call: those of a call Redis did not apply, and those beyond what one
   * call may report (the trust model's cap, {@link io.retrybudget.budget.redis.protocol.BudgetCall}).
   */
  void sendAgain(long requests, long denied, long retries) {
    resendRequests.add(requests);
    resendDenied.add(denied);
    resendRetries.add(retries);
  }
}
