package io.retrybudget.retry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.BudgetDecision;
import io.retrybudget.budget.RetryBudget;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.PriorityQueue;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.junit.jupiter.api.Test;

/**
 * A seeded random driver of the asynchronous state machine on virtual time: timers that fire late
 * by random amounts, budget answers that are immediate, slow, late, failing or thrown, attempts
 * that succeed, fail, hang or complete after they were cancelled, timers whose cancellation comes
 * too late (they fire anyway), hedging on and off, the caller
 * cancelling or completing at random moments. After every step it checks the invariants of
 * {@code AsyncCall} against what the world really has outstanding (its own timers, budget requests
 * and attempt futures, not the state's view of them). About a quarter of the schedules have no
 * deadline, so that the deadline's backstop timer cannot hide a lost event: every call must still
 * end. What is seen inside an attempt function is recorded and checked by the driver (the executor
 * turns what an attempt function throws into a failed attempt). {@code -Dschedules=N} runs N
 * schedules (default 10,000); a failure names its seed ({@code -Dseed=S} replays one).
 */
class SeededScheduleTest {
  private static final long MS = 1_000_000L;

  /** One event on the virtual clock: a scheduler task or something the world does. */
  private static final class Event implements Comparable<Event>, RetryScheduler.Cancellable {
    final long due;
    final long seq;
    final Runnable run;
    final boolean timer;
    boolean cancelled;
    boolean firesEvenIfCancelled; // a cancel that comes too late: the task is already running
    boolean ran;

    Event(long due, long seq, Runnable run, boolean timer) {
      this.due = due;
      this.seq = seq;
      this.run = run;
      this.timer = timer;
    }

    @Override
    public void cancel() {
      cancelled = true;
    }

    @Override
    public int compareTo(Event o) {
      return due != o.due ? Long.compare(due, o.due) : Long.compare(seq, o.seq);
    }
  }

  private record BudgetRequest(CompletableFuture<BudgetDecision> answer, boolean forRetry, int round) {}

  /** The world of one schedule: a virtual clock, a late scheduler, a budget and attempts that misbehave. */
  private static final class World implements RetryScheduler, RetryBudget {
    final SplittableRandom rnd;
    final PriorityQueue<Event> queue = new PriorityQueue<>();
    final List<Event> timers = new ArrayList<>();
    final List<BudgetRequest> budgetRequests = new ArrayList<>();
    final List<CompletableFuture<String>> attemptFutures = new ArrayList<>();
    final List<String> violations = new ArrayList<>(); // seen inside attempt functions, checked by the driver
    CallFuture<String> call; // null until callAsync returned
    final long maxLate;
    long now = 1_000_000_000L;
    long seq;
    int firstAttempts;

    World(long seed) {
      rnd = new SplittableRandom(seed);
      maxLate = rnd.nextInt(4) == 0 ? 0 : (1 + rnd.nextInt(60)) * MS;
    }

    Event at(long due, Runnable run, boolean timer) {
      Event e = new Event(due, seq++, run, timer);
      queue.add(e);
      if (timer) {
        timers.add(e);
      }
      return e;
    }

    // ---- the scheduler: every timer may be late by up to maxLate
    @Override
    public Cancellable schedule(Runnable task, long delayNanos) {
      long late = maxLate > 0 && rnd.nextInt(3) == 0 ? rnd.nextLong(maxLate + 1) : 0;
      Event e = at(now + delayNanos + late, task, true);
      e.firesEvenIfCancelled = rnd.nextInt(5) == 0;
      return e;
    }

    int liveTimers() {
      int n = 0;
      for (Event e : timers) {
        if (!e.cancelled && !e.ran) {
          n++;
        }
      }
      return n;
    }

    // ---- the budget: answers fast, slow, late, failing, or throws
    @Override
    public String name() {
      return "fuzz";
    }

    @Override
    public void recordFirstAttempt() {
      firstAttempts++;
    }

    @Override
    public BudgetDecision acquireBlocking() {
      throw new AssertionError("the async path never blocks on the budget");
    }

    @Override
    public CompletionStage<BudgetDecision> acquire() {
      int mode = rnd.nextInt(10);
      if (mode == 0) {
        throw new IllegalStateException("budget bug");
      }
      BudgetDecision d = rnd.nextInt(4) == 0 ? BudgetDecision.DENIED_EXHAUSTED : BudgetDecision.GRANTED;
      if (mode <= 3) {
        return CompletableFuture.completedFuture(d);
      }
      CompletableFuture<BudgetDecision> answer = new CompletableFuture<>();
      // what the request is for, as the call stands when it asks: a retry (ASKING; also a retryable
      // first answer inside callAsync, before it returned) or a hedge of the current round
      CallState.Snapshot s = call != null ? call.call().snapshot() : null;
      boolean forRetry = s == null || s.phase() == CallState.Phase.ASKING;
      budgetRequests.add(new BudgetRequest(answer, forRetry, s == null ? 1 : s.round()));
      long after = mode <= 7 ? rnd.nextLong(20 * MS) : rnd.nextLong(400 * MS); // slow, or late
      at(now + after, () -> {
        if (mode == 9) {
          answer.completeExceptionally(new IOException("redis down"));
        } else {
          answer.complete(d);
        }
      }, false);
      return answer;
    }

    @Override
    public void close() {}

    /** Budget requests still unanswered: for the call's retry, or for a hedge of {@code round}. */
    int pendingBudgetRequests(boolean forRetry, int round) {
      int n = 0;
      for (BudgetRequest b : budgetRequests) {
        if (!b.answer.isDone() && b.forRetry == forRetry && (forRetry || b.round == round)) {
          n++;
        }
      }
      return n;
    }

    // ---- attempts: succeed, fail (retryably or not), answer a retryable result, hang, or answer at once
    CompletableFuture<String> attempt(int number) {
      int mode = rnd.nextInt(14);
      CompletableFuture<String> f = new CompletableFuture<>();
      attemptFutures.add(f);
      if (mode == 0) {
        return f; // hangs: only a timeout, the deadline or the caller ends it
      }
      Runnable answer = mode <= 2 || mode == 12 ? () -> f.complete("ok " + number)
          : mode == 3 ? () -> f.completeExceptionally(new IllegalStateException("fatal"))
          : mode == 11 || mode == 13 ? () -> f.complete("again") // a result the policy retries (a 503, say)
          : () -> f.completeExceptionally(new IOException("transient"));
      if (mode >= 5 && mode <= 6 || mode >= 12) {
        answer.run(); // at once, on the thread that started it
      } else {
        at(now + rnd.nextLong(80 * MS), answer, false); // later; completes even if cancelled meanwhile (a no-op)
      }
      return f;
    }

    int hangingAttempts() {
      int n = 0;
      for (CompletableFuture<String> f : attemptFutures) {
        if (!f.isDone()) {
          n++;
        }
      }
      return n;
    }
  }

  @Test
  void randomInterleavingsKeepEveryInvariant() {
    long seedProperty = Long.getLong("seed", -1);
    int schedules = Integer.getInteger("schedules", 10_000);
    long started = System.nanoTime();
    long steps = 0;
    if (seedProperty >= 0) {
      steps += runOne(seedProperty);
    } else {
      for (long seed = 0; seed < schedules; seed++) {
        steps += runOne(seed);
      }
    }
    System.out.printf("SeededScheduleTest: %,d schedules, %,d steps, %.1f s%n", seedProperty >= 0 ? 1 : schedules,
        steps, (System.nanoTime() - started) / 1e9);
  }

  /** Runs one schedule; returns the steps it took. */
  private long runOne(long seed) {
    try {
      return schedule(seed);
    } catch (AssertionError | RuntimeException e) {
      throw new AssertionError("schedule with seed " + seed + " (replay with -Dseed=" + seed + "): " + e.getMessage(), e);
    }
  }

  private long schedule(long seed) {
    World w = new World(seed);
    SplittableRandom r = w.rnd;
    int maxAttempts = 1 + r.nextInt(6);
    long deadlineNanos = (50 + r.nextInt(450)) * MS;
    // a quarter without a deadline (then always with an attempt timeout): no backstop timer
    boolean hasDeadline = r.nextInt(4) != 0;
    RetryPolicy.Builder pb = RetryPolicy.builder().maxAttempts(maxAttempts)
        .backoff(Duration.ofMillis(1 + r.nextInt(50)), Duration.ofMillis(200));
    if (hasDeadline) {
      pb.deadline(Duration.ofNanos(deadlineNanos));
    }
    if (!hasDeadline || r.nextBoolean()) {
      pb.attemptTimeout(Duration.ofNanos(Math.min(deadlineNanos, (10 + r.nextInt(100)) * MS)));
    }
    pb.<String>retryOnResult("again"::equals);
    if (r.nextInt(4) == 0) {
      pb.serverDelay((v, f) -> f instanceof IOException ? Duration.ofMillis(r.nextInt(60) - 5) : null);
    }
    RetryPolicy policy = pb.build();
    List<RetryOutcome> outcomes = new ArrayList<>();
    RetryExecutor.Builder eb = RetryExecutor.builder(policy).nanoClock(() -> w.now).scheduler(w).random(r::nextDouble)
        .listener(new RetryListener() {
          @Override
          public void onOutcome(RetryOutcome outcome, int attempts) {
            outcomes.add(outcome);
          }
        });
    int maxHedges = r.nextBoolean() ? 1 + r.nextInt(2) : 0;
    if (maxHedges > 0) {
      eb.hedging(HedgePolicy.fixedDelay(Duration.ofMillis(1 + r.nextInt(50))).maxHedges(maxHedges).build());
    }
    boolean budgeted = r.nextBoolean();
    if (budgeted) {
      eb.budget(w);
    }
    RetryExecutor executor = eb.build();
    long start = w.now;
    int[] started = new int[1];
    CompletableFuture<String> returned = executor.callAsync(ctx -> {
      started[0]++;
      // recorded, not thrown: the executor turns what an attempt function throws into a failed attempt
      if (hasDeadline && w.now - start >= deadlineNanos) {
        w.violations.add("an attempt started " + (w.now - start) / MS + " ms into a " + deadlineNanos / MS + " ms deadline");
      }
      if (w.call != null && w.call.isDone()) {
        w.violations.add("attempt " + ctx.attempt() + " started after the call ended");
      }
      return w.attempt(ctx.attempt());
    });
    if (!(returned instanceof CallFuture)) {
      // a first attempt that succeeded at once: answered without the state machine
      assertTrue(returned.isDone() && !returned.isCompletedExceptionally(), "only a success skips the machine");
      assertEquals(1, started[0]);
      assertEquals(List.of(RetryOutcome.SUCCESS), outcomes);
      assertEquals(0, w.liveTimers(), "and leaves no timer");
      return 0;
    }
    CallFuture<String> call = (CallFuture<String>) returned;
    w.call = call;
    int callerMove = r.nextInt(4); // 0: cancel, 1: complete, 2: completeExceptionally, 3: wait
    if (callerMove < 3) {
      w.at(w.now + r.nextLong(deadlineNanos + 50 * MS), () -> {
        switch (callerMove) {
          case 0 -> call.cancel(true);
          case 1 -> call.complete("the caller's own");
          default -> call.completeExceptionally(new IOException("the caller gave up"));
        }
      }, false);
    }
    long endBy = hasDeadline ? start + deadlineNanos + w.maxLate : Long.MAX_VALUE;
    long steps = 0;
    Invariants inv = new Invariants(w, call, outcomes, maxAttempts, maxHedges, hasDeadline);
    inv.check(started[0]);
    while (!w.queue.isEmpty()) {
      Event e = w.queue.poll();
      if (e.cancelled && !e.firesEvenIfCancelled) {
        continue;
      }
      if (e.due > endBy) {
        assertTrue(call.isDone(), "open at " + (e.due - start) / MS + " ms, past deadline + lateness");
      }
      w.now = Math.max(w.now, e.due);
      e.ran = true;
      e.run.run();
      steps++;
      inv.check(started[0]);
    }
    assertTrue(call.isDone(), "the call ended (with no deadline too: no event was lost)");
    assertEquals(1, outcomes.size(), "one outcome reported: " + outcomes);
    assertTrue(outcomes.get(0) != RetryOutcome.ERROR, "no call ended by a broken invariant or a failing step");
    if (budgeted) {
      assertEquals(1, w.firstAttempts, "one first attempt counted in the budget");
    }
    return steps;
  }

  /** The invariants, after every step, against what the world really has outstanding. */
  private record Invariants(World w, CallFuture<String> call, List<RetryOutcome> outcomes, int maxAttempts,
      int maxHedges, boolean hasDeadline) {
    void check(int started) {
      CallState.Snapshot s = call.call().snapshot();
      assertEquals(List.of(), w.violations, "invariants broken inside attempt functions");
      assertTrue(s.attempts() <= maxAttempts && started <= maxAttempts, "attempts <= maxAttempts");
      assertTrue(s.hedgesInRound() <= maxHedges, "hedges per round <= maxHedges");
      assertTrue(s.runningAllInRound(), "every running attempt belongs to the current round");
      assertTrue(s.running() == 0 || s.phase() == CallState.Phase.RUNNING, "attempts run only in a running round");
      assertTrue(!(s.backoffArmed() && s.running() > 0), "never a backoff beside a running round");
      assertEquals(s.running(), w.hangingAttempts(), "the attempts running are exactly the requests out");
      assertEquals(call.isDone() ? 1 : 0, outcomes.size(), "one outcome, told when the call ends: " + outcomes);
      int deadlineTimer = hasDeadline ? 1 : 0;
      if (call.isDone()) {
        assertEquals(CallState.Phase.ENDED, s.phase(), "a completed call is ENDED");
        assertEquals(0, s.running(), "a completed call has no attempt left");
        assertEquals(0, w.liveTimers(), "a completed call has no timer left");
        return; // budget answers may still come: they are ignored (the outcome above stays one)
      }
      assertTrue(s.phase() != CallState.Phase.ENDED, "an ENDED call has completed its future");
      int retryAsks = w.pendingBudgetRequests(true, 0);
      switch (s.phase()) {
        case RUNNING -> {
          assertTrue(s.running() > 0, "a running round has an attempt out");
          assertEquals(0, retryAsks, "running: no retry waits for the budget");
          if (s.budgetWaits() > 0) {
            assertTrue(w.pendingBudgetRequests(false, s.round()) > 0, "a hedge of this round really waits for the budget");
          }
        }
        case ASKING -> {
          assertEquals(1, retryAsks, "asking the budget: exactly one request for the retry really out");
          assertEquals(deadlineTimer, w.liveTimers(), "asking: no timer but the deadline's");
        }
        case BACKING_OFF -> {
          assertEquals(0, retryAsks, "backing off: the budget has answered");
          assertTrue(s.backoffArmed(), "backing off: the state has a backoff timer");
          assertEquals(1 + deadlineTimer, w.liveTimers(), "backing off: the scheduler holds the backoff (and deadline) timer");
        }
        default -> throw new AssertionError("an open call in phase " + s.phase());
      }
    }
  }

  /**
   * The synchronous path under the same kind of world: sleepers that wake late, budget answers
   * that take time, fail or throw, attempts that take time. It never starts an attempt at or after
   * the deadline nor more than maxAttempts, and reports one outcome that matches what it returned.
   */
  @Test
  void randomSynchronousCallsNeverStartAnAttemptPastTheDeadline() throws Exception {
    int schedules = Integer.getInteger("schedules", 10_000);
    for (long seed = 0; seed < schedules; seed++) {
      try {
        syncSchedule(seed);
      } catch (AssertionError | RuntimeException e) {
        throw new AssertionError("synchronous schedule with seed " + seed + ": " + e.getMessage(), e);
      }
    }
  }

  private static void syncSchedule(long seed) {
    SplittableRandom r = new SplittableRandom(seed ^ 0x9E3779B97F4A7C15L);
    long[] now = {0};
    int maxAttempts = 1 + r.nextInt(6);
    long deadlineNanos = (20 + r.nextInt(300)) * MS;
    long lateSleep = r.nextInt(3) == 0 ? 0 : (1 + r.nextInt(20)) * MS;
    RetryBudget budget = new RetryBudget() {
      public String name() {
        return "sync-fuzz";
      }

      public void recordFirstAttempt() {}

      public BudgetDecision acquireBlocking() {
        now[0] += r.nextLong(30 * MS);
        int mode = r.nextInt(6);
        if (mode == 0) {
          throw new IllegalStateException("budget bug");
        }
        return mode == 1 ? BudgetDecision.DENIED_EXHAUSTED : BudgetDecision.GRANTED;
      }

      public CompletionStage<BudgetDecision> acquire() {
        throw new AssertionError("the sync path asks acquireBlocking()");
      }

      public void close() {}
    };
    List<RetryOutcome> outcomes = new ArrayList<>();
    RetryExecutor.Builder b = RetryExecutor.builder(RetryPolicy.builder().maxAttempts(maxAttempts)
            .backoff(Duration.ofMillis(1 + r.nextInt(50)), Duration.ofMillis(200)).deadline(Duration.ofNanos(deadlineNanos))
            .build())
        .nanoClock(() -> now[0]).random(r::nextDouble)
        .sleeper(n -> now[0] += n + (lateSleep > 0 ? r.nextLong(lateSleep) : 0))
        .listener(new RetryListener() {
          @Override
          public void onOutcome(RetryOutcome outcome, int attempts) {
            outcomes.add(outcome);
          }
        });
    if (r.nextBoolean()) {
      b.budget(budget);
    }
    int[] started = new int[1];
    List<String> violations = new ArrayList<>(); // recorded inside the callable, checked here
    Object answer;
    try {
      answer = b.build().call(() -> {
        started[0]++;
        if (now[0] >= deadlineNanos) {
          violations.add("an attempt started at " + now[0] / MS + " ms, past the " + deadlineNanos / MS + " ms deadline");
        }
        now[0] += r.nextLong(40 * MS);
        int mode = r.nextInt(5);
        if (mode == 0) {
          return "ok";
        }
        throw mode == 1 ? new IllegalStateException("fatal") : new IOException("transient");
      });
    } catch (Exception e) {
      answer = e;
    }
    assertEquals(List.of(), violations);
    assertTrue(started[0] <= maxAttempts, started[0] + " attempts, more than maxAttempts " + maxAttempts);
    assertEquals(1, outcomes.size(), "one outcome: " + outcomes);
    assertEquals(answer.equals("ok"), outcomes.get(0) == RetryOutcome.SUCCESS, "outcome " + outcomes + " for " + answer);
    if (outcomes.get(0) == RetryOutcome.BUDGET_EXHAUSTED) {
      assertTrue(answer instanceof RetryBudgetExhaustedException, String.valueOf(answer));
    }
  }
}
