package io.retrybudget.budget;

import io.retrybudget.budget.redis.protocol.BudgetScripts;
import io.retrybudget.budget.redis.protocol.CountsInDoubt;
import io.retrybudget.budget.redis.protocol.RelayHeld;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * The counts of a budget's calls of unknown fate on one way, each with when its call was sent: at most
 * {@link BudgetScripts#MAX_CARRIED}, in number order, every one carried by each next call on that way
 * until a carrier is answered (Redis or the relay adds each only if its call never ran, and never one
 * twice: {@link CountsInDoubt}). Immutable: each change is a new value, swapped in by its holder.
 *
 * @param way the way the calls went ({@code RoutedPort}'s index)
 * @param calls the calls' counts and send times, in increasing number order
 */
record CallsInDoubt(int way, List<Held> calls) {
  /** How long counts in doubt wait for a call on their way: within the 4 minutes Redis keeps a silent client's entry. */
  static final long KEPT_MILLIS = 60_000;

  /**
   * One call's counts and when it was sent, and the relay batch it went into if it ran ({@code origin}:
   * a lower bound, or null when the client cannot tell which relay process had it): what it becomes
   * when it is given up here ({@link RelayHeld#adopt}).
   */
  record Held(CountsInDoubt counts, long sinceMillis, RelayHeld.Known origin) {
    Held(CountsInDoubt counts, long sinceMillis) {
      this(counts, sinceMillis, null);
    }
  }

  /** What a change kept, the first attempts it gave up, and the calls it gave up. */
  record Change(CallsInDoubt next, long lostRequests, List<Held> given) {
    Change(CallsInDoubt next, long lostRequests) {
      this(next, lostRequests, List.of());
    }
  }

  CallsInDoubt {
    calls = List.copyOf(calls);
  }

  /** The counts to carry, in number order. */
  List<CountsInDoubt> counts() {
    return calls.stream().map(Held::counts).toList();
  }

  long requests() {
    return calls.stream().mapToLong(h -> h.counts().requests()).sum();
  }

  /** {@code held} (a call on {@code way} of unknown fate) added to {@code was}; another way's are given up, and the oldest beyond the limit. */
  static Change add(CallsInDoubt was, int way, Held held) {
    long lost = 0;
    List<Held> calls = new ArrayList<>();
    List<Held> given = new ArrayList<>();
    if (was != null && was.way == way) {
      calls.addAll(was.calls);
    } else if (was != null) {
      lost += was.requests(); // one way's at a time
      given.addAll(was.calls);
    }
    calls.add(held);
    calls.sort(Comparator.comparingLong(h -> h.counts().seq()));
    while (calls.size() > BudgetScripts.MAX_CARRIED) {
      Held oldest = calls.stream().min(Comparator.comparingLong(Held::sinceMillis)).orElseThrow();
      calls.remove(oldest);
      lost += oldest.counts().requests();
      given.add(oldest);
    }
    return new Change(new CallsInDoubt(way, calls), lost, given);
  }

  /** Without the calls whose relay batch is {@code relay}'s (their way now answers as another relay), which it gives up. */
  Change withoutRelay(String relay) {
    List<Held> given = calls.stream().filter(h -> h.origin() != null && h.origin().relay().equals(relay)).toList();
    if (given.isEmpty()) {
      return new Change(this, 0);
    }
    List<Held> left = calls.stream().filter(h -> !given.contains(h)).toList();
    return new Change(left.isEmpty() ? null : new CallsInDoubt(way, left),
        given.stream().mapToLong(h -> h.counts().requests()).sum(), given);
  }

  /** Without the calls numbered as in {@code carried} (answered: added, or dropped as run already); null when none is left. */
  CallsInDoubt without(List<CountsInDoubt> carried) {
    List<Held> left = calls.stream().filter(h -> carried.stream().noneMatch(c -> c.seq() == h.counts().seq())).toList();
    return left.isEmpty() ? null : left.size() == calls.size() ? this : new CallsInDoubt(way, left);
  }

  /** Without the calls held longer than {@link #KEPT_MILLIS} at {@code now} (given up); null when none is left. */
  Change keptAt(long now) {
    List<Held> left = calls.stream().filter(h -> now - h.sinceMillis() <= KEPT_MILLIS).toList();
    if (left.size() == calls.size()) {
      return new Change(this, 0);
    }
    List<Held> given = calls.stream().filter(h -> now - h.sinceMillis() > KEPT_MILLIS).toList();
    long lost = given.stream().mapToLong(h -> h.counts().requests()).sum();
    return new Change(left.isEmpty() ? null : new CallsInDoubt(way, left), lost, given);
  }
}
