package io.retrybudget.server;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;

/**
 * Runs a schedule of events against a {@link QueuePolicy} on fake time, with a timer that fires at
 * {@link QueuePolicy#nextExpiryNanos()} as the real one does, and checks every action against an
 * independent model of the rules after every step. {@link #run} returns the first violation, or
 * null. The policy may be built with another configuration than the model's, or be denied the
 * deadlines (broken variants: the checker must catch them).
 */
final class QueueChecker {
  /** One event of a schedule. */
  sealed interface Op permits Offer, Release, Advance, Cancel {}

  /** A request arrives; {@code deadlineMicros} -1 for none, relative to its arrival. */
  record Offer(boolean retry, long deadlineMicros) implements Op {}

  /** The oldest running request finishes (nothing when none runs). */
  record Release() implements Op {}

  /** Time passes; the timer fires at every expiry on the way. */
  record Advance(long micros) implements Op {}

  /** The caller of the {@code index}-th waiting request (modulo their number) goes away. */
  record Cancel(int index) implements Op {}

  /** The model's view of a waiting request. */
  private record Waiting(int id, boolean retry, long enqueued, long deadline) {}

  private final QueueConfig model;
  private final QueuePolicy<Integer> policy;
  private final boolean hideDeadlines;
  private final LinkedHashMap<Integer, Waiting> waiting = new LinkedHashMap<>();
  private final List<Integer> running = new ArrayList<>();
  private final Set<Integer> decided = new HashSet<>();
  private final Map<Integer, Long> deadlines = new HashMap<>();
  private long lastEmpty;
  private long now;
  private int nextId;

  QueueChecker(QueueConfig model, QueueConfig policyConfig, boolean hideDeadlines) {
    this.model = model;
    this.policy = new QueuePolicy<>(policyConfig, 0);
    this.hideDeadlines = hideDeadlines;
  }

  /** The first violation of the schedule (with its step), or null when every step kept the rules. */
  static String check(QueueConfig model, QueueConfig policyConfig, boolean hideDeadlines, List<Op> ops) {
    QueueChecker c = new QueueChecker(model, policyConfig, hideDeadlines);
    for (int i = 0; i < ops.size(); i++) {
      String v = c.step(ops.get(i));
      if (v != null) {
        return "step " + i + " " + ops.get(i) + " at " + c.now + " ns: " + v;
      }
    }
    // the end: time runs on until every request is decided and done
    for (int i = 0; i < 10_000 && (!c.waiting.isEmpty() || !c.running.isEmpty()); i++) {
      String v = c.step(c.running.isEmpty() ? new Advance(1_000) : new Release());
      if (v != null) {
        return "drain " + i + " at " + c.now + " ns: " + v;
      }
    }
    if (c.decided.size() != c.nextId) {
      return "decided " + c.decided.size() + " of " + c.nextId + " requests";
    }
    return null;
  }

  /** A random schedule: arrivals, releases, short advances and cancels. */
  static List<Op> randomOps(Random r, int n) {
    List<Op> ops = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      int k = r.nextInt(10);
      ops.add(k < 4 ? new Offer(r.nextInt(3) == 0, r.nextInt(4) == 0 ? -1 : r.nextInt(150_000))
          : k < 6 ? new Release() : k < 9 ? new Advance(r.nextInt(20_000)) : new Cancel(r.nextInt(8)));
    }
    return ops;
  }

  private String step(Op op) {
    String v = act(op);
    return v != null ? v : invariants();
  }

  private String act(Op op) {
    if (op instanceof Offer o) {
      int id = nextId++;
      long deadline = o.deadlineMicros() < 0 ? QueuePolicy.NO_DEADLINE : now + o.deadlineMicros() * 1_000;
      deadlines.put(id, deadline);
      boolean full = waiting.size() >= model.maxQueue() && running.size() >= model.workers();
      boolean retryWaiting = waiting.values().stream().anyMatch(Waiting::retry);
      List<QueuePolicy.Action<Integer>> actions =
          policy.offer(id, o.retry(), hideDeadlines ? QueuePolicy.NO_DEADLINE : deadline, now);
      String v = apply(actions, null);
      if (v != null) {
        return v;
      }
      boolean started = actions.stream().anyMatch(a -> a.item() == id && a instanceof QueuePolicy.Start);
      boolean dropped = actions.stream().anyMatch(a -> a.item() == id && a instanceof QueuePolicy.Drop);
      for (QueuePolicy.Action<Integer> a : actions) {
        if (a instanceof QueuePolicy.Drop<Integer> d && d.reason() == QueueDrop.FULL) {
          if (!full) {
            return "FULL drop of " + d.item() + " with room in the queue";
          }
          if (d.item() == id && !o.retry() && retryWaiting) {
            return "a first attempt was shed while a retry waited";
          }
          if (d.item() != id && (o.retry() || !d.retry())) {
            return "request " + d.item() + " was evicted for a " + (o.retry() ? "retry" : "first attempt");
          }
        }
      }
      if (!started && !dropped) {
        if (waiting.isEmpty()) {
          lastEmpty = now;
        }
        waiting.put(id, new Waiting(id, o.retry(), now, deadline));
      }
    } else if (op instanceof Release) {
      if (running.isEmpty()) {
        return null;
      }
      running.remove(0);
      return apply(policy.release(now), Boolean.TRUE);
    } else if (op instanceof Advance a) {
      long target = now + a.micros() * 1_000;
      while (policy.nextExpiryNanos() <= target) {
        now = Math.max(now, policy.nextExpiryNanos());
        String v = apply(policy.expire(now), null);
        if (v != null) {
          return v;
        }
        v = invariants();
        if (v != null) {
          return v;
        }
      }
      now = target;
      return apply(policy.expire(now), null);
    } else if (op instanceof Cancel c) {
      if (waiting.isEmpty()) {
        return null;
      }
      Integer id = new ArrayList<>(waiting.keySet()).get(c.index() % waiting.size());
      return apply(policy.cancel(id, now), null);
    }
    return null;
  }

  /** The model's expiry of a waiting request: deadline, or waited long, or waited short in a standing queue. */
  private long expiry(Waiting w) {
    long standingFrom = lastEmpty + model.intervalNanos();
    long codel = Math.min(w.enqueued() + model.longTimeoutNanos(), Math.max(w.enqueued() + model.shortTimeoutNanos(),
        standingFrom));
    return Math.min(w.deadline(), codel);
  }

  private boolean standingAfterDrops() {
    return !waiting.isEmpty() && now - lastEmpty >= model.intervalNanos();
  }

  private String apply(List<QueuePolicy.Action<Integer>> actions, Boolean fromRelease) {
    for (QueuePolicy.Action<Integer> a : actions) {
      int id = a.item();
      if (!decided.add(id)) {
        return "request " + id + " decided twice";
      }
      Waiting w = waiting.remove(id);
      if (a instanceof QueuePolicy.Drop<Integer> d) {
        if (d.reason() == QueueDrop.DEADLINE && deadlines.get(id) > now) {
          return "DEADLINE drop of " + id + " before its deadline";
        }
        if (w != null && (d.reason() == QueueDrop.DEADLINE || d.reason() == QueueDrop.CODEL) && expiry(w) != now) {
          return d.reason() + " drop of " + id + " at " + now + ", the model's expiry is " + expiry(w);
        }
        if (d.reason() == QueueDrop.CODEL && deadlines.get(id) <= now) {
          return "CODEL drop of " + id + " whose deadline had passed (should be DEADLINE)";
        }
      } else if (a instanceof QueuePolicy.Start<Integer> s) {
        if (deadlines.get(id) <= now) {
          return "request " + id + " started at or past its deadline";
        }
        if (s.waitedNanos() > model.longTimeoutNanos()) {
          return "request " + id + " started after waiting " + s.waitedNanos() + " ns";
        }
        if (w != null && fromRelease != null) {
          String v = choice(w);
          if (v != null) {
            return v;
          }
        }
        running.add(id);
      }
    }
    if (waiting.isEmpty()) {
      lastEmpty = now;
    }
    return null;
  }

  /** The request a freed worker took must be the first class's newest while standing with LIFO, else its oldest. */
  private String choice(Waiting taken) {
    List<Waiting> pool = new ArrayList<>(waiting.values());
    pool.add(taken);
    boolean anyFirst = pool.stream().anyMatch(x -> !x.retry());
    if (taken.retry() && anyFirst) {
      return "retry " + taken.id() + " started while a first attempt waited";
    }
    boolean standing = now - lastEmpty >= model.intervalNanos();
    boolean lifo = model.adaptiveLifo() && standing;
    for (Waiting x : pool) {
      if (x.retry() == taken.retry() && x != taken
          && (lifo ? x.enqueued() > taken.enqueued() || (x.enqueued() == taken.enqueued() && x.id() > taken.id())
              : x.enqueued() < taken.enqueued() || (x.enqueued() == taken.enqueued() && x.id() < taken.id()))) {
        return (lifo ? "standing with LIFO: " : "not LIFO: ") + taken.id() + " started before " + x.id();
      }
    }
    return null;
  }

  private String invariants() {
    if (policy.size() != waiting.size() || policy.running() != running.size()) {
      return "policy holds " + policy.size() + " waiting / " + policy.running() + " running, the model "
          + waiting.size() + " / " + running.size();
    }
    if (running.size() > model.workers()) {
      return running.size() + " running with " + model.workers() + " workers";
    }
    if (waiting.size() > model.maxQueue()) {
      return waiting.size() + " waiting with a bound of " + model.maxQueue();
    }
    if (!waiting.isEmpty() && running.size() < model.workers()) {
      return "a request waits while a worker is free";
    }
    long next = Long.MAX_VALUE;
    for (Waiting w : waiting.values()) {
      if (expiry(w) <= now) {
        return "request " + w.id() + " still waits past its expiry " + expiry(w);
      }
      next = Math.min(next, expiry(w));
    }
    if (policy.nextExpiryNanos() != next) {
      return "the timer would fire at " + policy.nextExpiryNanos() + ", the model's next expiry is " + next;
    }
    if (policy.lifo(now) != (model.adaptiveLifo() && standingAfterDrops())) {
      return "LIFO " + policy.lifo(now) + " while the model's queue is " + (standingAfterDrops() ? "" : "not ")
          + "standing";
    }
    return null;
  }
}
