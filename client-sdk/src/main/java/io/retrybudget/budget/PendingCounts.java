package io.retrybudget.budget;

import io.retrybudget.budget.internal.ResendCounts;
import java.util.concurrent.atomic.LongAdder;

/**
 * Counts one budget has not sent to Redis yet: first attempts, local refusals and the fallback's
 * grants since the last call (recorded without a lock: a successful first attempt is one increment),
 * and those of calls Redis did not apply, sent again with the next one while they are younger than the
 * window ({@link ResendCounts}).
 */
final class PendingCounts {
  private final LongAdder requests = new LongAdder();
  private final LongAdder denied = new LongAdder();
  // retries the fallback granted, reported to Redis with the next call (and resent like the others)
  private final LongAdder retries = new LongAdder();
  // counts Redis did not apply (a stale or missing reply): sent again with the next call, and already
  // in the budget's own window (so not recorded there a second time); guarded by lock, replaced
  // when the budget's window changes
  private final Object lock = new Object();
  private ResendCounts resend;

  /** {@code windowMillis}: how long counts are sent again at most (the budget's window). */
  PendingCounts(long windowMillis) {
    this.resend = new ResendCounts(windowMillis);
  }

  /**
   * What one call takes: the new first attempts and refusals (to be put in the own window), what the
   * call sends (the new counts plus those sent again), and those by when they were first taken
   * ({@link ResendCounts#take}), for {@link #sendAgain}.
   */
  record Taken(long newRequests, long newDenied, long requests, long denied, long retries, long[][] rows,
      long windowMillis) {}

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
    if (requests.sum() > 0 || denied.sum() > 0 || retries.sum() > 0) {
      return true;
    }
    synchronized (lock) {
      return resend.any();
    }
  }

  /**
   * Takes everything for a call at {@code now} (the caller holds the own window's lock, see
   * {@link LocalFallback#take}); what was kept from before the window in force ({@code windowMillis},
   * the budget's as Redis last told it) is dropped ({@link #stale}).
   */
  Taken take(long now, long windowMillis) {
    long r = requests.sumThenReset();
    long d = denied.sumThenReset();
    long g = retries.sumThenReset();
    long[][] rows;
    long takenWith;
    synchronized (lock) {
      if (windowMillis != resend.windowMillis()) {
        resend = resend.withWindow(windowMillis); // a window changed mid-flight: kept by when they came
      }
      rows = resend.take(now, r, d, g);
      takenWith = resend.windowMillis();
    }
    long sumR = 0;
    long sumD = 0;
    long sumG = 0;
    for (long[] row : rows) {
      sumR += row[1];
      sumD += row[2];
      sumG += row[3];
    }
    return new Taken(r, d, sumR, sumD, sumG, rows, takenWith);
  }

  /**
   * Counts of {@code taken} that go with the next call: those of a call Redis did not apply, the part
   * it sent ({@code sent}: its oldest), or those beyond what one call may report (the trust model's
   * cap, {@link io.retrybudget.budget.redis.protocol.BudgetCall}: its newest).
   */
  void sendAgain(Taken taken, long requests, long denied, long retries, boolean sent) {
    if (requests <= 0 && denied <= 0 && retries <= 0) {
      return;
    }
    synchronized (lock) {
      resend.keep(taken.rows(), taken.windowMillis(), Math.max(0, requests), Math.max(0, denied), Math.max(0, retries), sent);
    }
  }

  /** First attempts dropped from being sent again for having been kept longer than the window. */
  long stale() {
    synchronized (lock) {
      return resend.stale();
    }
  }

  /** Refusals dropped with them (for tests: each refusal is counted once, or dropped as stale). */
  long staleDenials() {
    synchronized (lock) {
      return resend.staleDenied();
    }
  }
}
