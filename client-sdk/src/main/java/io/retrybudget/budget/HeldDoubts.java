package io.retrybudget.budget;

import io.retrybudget.budget.redis.protocol.BudgetCall;
import io.retrybudget.budget.redis.protocol.CountsInDoubt;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.UnaryOperator;

/**
 * A budget's calls of unknown fate ({@link CallsInDoubt}, one way's at a time), shared by its calls in
 * flight: each call on that way carries them ({@link #offer}), a carrier answered lets go of the ones it
 * carried (added, or dropped as run already), and a call of unknown fate joins them. Carrying one again
 * after a carrier of unknown fate is safe: Redis and a relay never add a call's counts twice. What is
 * given up (held too long, another way's, beyond the limit, carried by a call answered with an error) is
 * counted in {@link #lostRequests}. Thread-safe, lock-free.
 */
final class HeldDoubts {
  private final AtomicReference<CallsInDoubt> held = new AtomicReference<>();
  private final AtomicLong lost = new AtomicLong();

  /** What the next call (at {@code now}) carries if it goes their way; those held too long are given up. */
  CallsInDoubt offer(long now) {
    while (true) {
      CallsInDoubt was = held.get();
      if (was == null) {
        return null;
      }
      CallsInDoubt.Change kept = was.keptAt(now);
      if (kept.next() == was || held.compareAndSet(was, kept.next())) {
        lost.addAndGet(kept.next() == was ? 0 : kept.lostRequests());
        return kept.next();
      }
    }
  }

  /** A call that carried {@code carried} was answered, applied: Redis or the relay judged each of them. */
  void answered(CallsInDoubt carried) {
    update(was -> was == null ? null : was.without(carried.counts()));
  }

  /** A call that carried {@code carried} was answered with an error: they are given up, so a way that refuses them costs one call's counts. */
  void refused(CallsInDoubt carried) {
    CallsInDoubt before = update(was -> was == null ? null : was.without(carried.counts()));
    if (before != null) {
      CallsInDoubt after = before.without(carried.counts());
      lost.addAndGet(before.requests() - (after == null ? 0 : after.requests()));
    }
  }

  /** Call {@code number}, {@code call}'s counts, sent on {@code way} at {@code sentAt}, is of unknown fate. */
  void unknown(int way, long number, BudgetCall call, long sentAt) {
    while (true) {
      CallsInDoubt was = held.get();
      CallsInDoubt.Change added = CallsInDoubt.add(was, way, new CallsInDoubt.Held(CountsInDoubt.of(number, call), sentAt));
      if (held.compareAndSet(was, added.next())) {
        lost.addAndGet(added.lostRequests());
        return;
      }
    }
  }

  /** First attempts given up in doubt so far. */
  void lostWithout(long requests) {
    lost.addAndGet(requests);
  }

  boolean any() {
    return held.get() != null;
  }

  long lostRequests() {
    return lost.get();
  }

  private CallsInDoubt update(UnaryOperator<CallsInDoubt> change) {
    while (true) {
      CallsInDoubt was = held.get();
      if (held.compareAndSet(was, change.apply(was))) {
        return was;
      }
    }
  }
}
