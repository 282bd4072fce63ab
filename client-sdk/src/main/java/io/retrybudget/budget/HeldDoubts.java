package io.retrybudget.budget;

import io.retrybudget.budget.redis.protocol.BudgetCall;
import io.retrybudget.budget.redis.protocol.CountsInDoubt;
import io.retrybudget.budget.redis.protocol.RelayHeld;
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
  private final java.util.function.BiPredicate<CallsInDoubt.Held, Long> adopt;

  /** Calls given up that no one adopts are lost. */
  HeldDoubts() {
    this((h, now) -> false);
  }

  /**
   * Calls given up go to {@code adopt}, with the time (a call that may have run at a relay becomes a
   * count kept for that relay's batch, {@link RelayHeld#adopt}); those it does not take are lost.
   */
  HeldDoubts(java.util.function.BiPredicate<CallsInDoubt.Held, Long> adopt) {
    this.adopt = adopt;
  }

  /** What the next call (at {@code now}) carries if it goes their way; those held too long are given up. */
  CallsInDoubt offer(long now) {
    while (true) {
      CallsInDoubt was = held.get();
      if (was == null) {
        return null;
      }
      CallsInDoubt.Change kept = was.keptAt(now);
      if (kept.next() == was) {
        return was;
      }
      if (held.compareAndSet(was, kept.next())) {
        given(kept, now);
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
    unknown(way, number, call, sentAt, null);
  }

  /**
   * As {@link #unknown(int, long, BudgetCall, long)}, {@code origin} the relay batch the call went into
   * if it ran (a lower bound; null: not known): what it becomes once given up.
   */
  void unknown(int way, long number, BudgetCall call, long sentAt, RelayHeld.Known origin) {
    while (true) {
      CallsInDoubt was = held.get();
      CallsInDoubt.Change added = CallsInDoubt.add(was, way,
          new CallsInDoubt.Held(CountsInDoubt.of(number, call), sentAt, origin));
      if (held.compareAndSet(was, added.next())) {
        given(added, sentAt);
        return;
      }
    }
  }

  /**
   * Way {@code way} answers as another relay than {@code relay}: the calls that may have run at
   * {@code relay} can be judged there no more, and are given up (to be adopted).
   */
  void relayGone(int way, String relay, long now) {
    while (true) {
      CallsInDoubt was = held.get();
      if (was == null || was.way() != way) {
        return;
      }
      CallsInDoubt.Change left = was.withoutRelay(relay);
      if (left.next() == was) {
        return;
      }
      if (held.compareAndSet(was, left.next())) {
        given(left, now);
        return;
      }
    }
  }

  private void given(CallsInDoubt.Change change, long now) {
    long adopted = 0;
    for (CallsInDoubt.Held h : change.given()) {
      if (adopt.test(h, now)) {
        adopted += h.counts().requests();
      }
    }
    lost.addAndGet(change.lostRequests() - adopted);
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
