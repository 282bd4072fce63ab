package io.retrybudget.server.servlet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import jakarta.servlet.AsyncContext;
import jakarta.servlet.AsyncListener;
import jakarta.servlet.ServletContext;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * {@link AsyncWait}'s state machine under every order of its events — the decision, the async
 * timeout (also late), the client leaving, the container running a {@code start} task, the
 * dispatch coming back through the filter (or not: a filter not mapped for ASYNC), completion —
 * in random sequential orders and with the decision, the timeout and the error racing on three
 * threads. After every run: the response is written at most once and never both written and
 * dispatched; without an error it is written or dispatched exactly once; every "proceed" that
 * became a decision is resumed or dropped exactly once; the container is never asked twice.
 */
class AsyncWaitTest {
  /** A container's async context: records what the wait asks of it, refuses what a container refuses. */
  static final class FakeAsync implements AsyncContext {
    final List<Runnable> tasks = new ArrayList<>();
    final AtomicInteger dispatches = new AtomicInteger();
    final AtomicInteger completes = new AtomicInteger();
    final AtomicInteger refused = new AtomicInteger();
    private boolean over; // complete() or dispatch() was called: this async cycle is over

    @Override
    public synchronized void dispatch() {
      if (over) {
        refused.incrementAndGet();
        throw new IllegalStateException("async cycle over");
      }
      over = true;
      dispatches.incrementAndGet();
    }

    @Override
    public void dispatch(String path) {
      dispatch();
    }

    @Override
    public void dispatch(ServletContext context, String path) {
      dispatch();
    }

    @Override
    public synchronized void complete() {
      if (over) {
        refused.incrementAndGet();
        throw new IllegalStateException("async cycle over");
      }
      over = true;
      completes.incrementAndGet();
    }

    synchronized boolean over() {
      return over;
    }

    @Override
    public synchronized void start(Runnable run) {
      tasks.add(run);
    }

    synchronized boolean hasTasks() {
      return !tasks.isEmpty();
    }

    synchronized List<Runnable> takeTasks() {
      List<Runnable> t = new ArrayList<>(tasks);
      tasks.clear();
      return t;
    }

    @Override
    public ServletRequest getRequest() {
      return null;
    }

    @Override
    public ServletResponse getResponse() {
      return null;
    }

    @Override
    public boolean hasOriginalRequestAndResponse() {
      return true;
    }

    @Override
    public void addListener(AsyncListener listener) {}

    @Override
    public void addListener(AsyncListener listener, ServletRequest request, ServletResponse response) {}

    @Override
    public <T extends AsyncListener> T createListener(Class<T> clazz) {
      throw new UnsupportedOperationException("not used by AsyncWait");
    }

    @Override
    public void setTimeout(long timeout) {}

    @Override
    public long getTimeout() {
      return 0;
    }
  }

  /** One request's run: the wait, what it did, what was resolved. */
  static final class Run {
    final FakeAsync async = new FakeAsync();
    final AtomicInteger writes = new AtomicInteger();
    final AtomicInteger notResumed = new AtomicInteger();
    final Map<Integer, AtomicInteger> resolved = new ConcurrentHashMap<>();
    final AsyncWait.Step<Integer> decision;
    final AsyncWait.Step<Integer> timeout;
    final AsyncWait<Integer> wait;

    Run(boolean decisionProceeds, boolean timeoutProceeds) {
      decision = decisionProceeds ? new AsyncWait.Proceed<>(1) : new AsyncWait.Answer<>(r -> writes.incrementAndGet());
      timeout = timeoutProceeds ? new AsyncWait.Proceed<>(2) : new AsyncWait.Answer<>(r -> writes.incrementAndGet());
      wait = AsyncWait.of(async, null, timeout, this::resolve, notResumed::incrementAndGet);
    }

    void resolve(int payload) {
      resolved.computeIfAbsent(payload, k -> new AtomicInteger()).incrementAndGet();
    }

    /** The filter entered again by the dispatch. */
    void reenter() {
      Integer p = wait.resume();
      if (p != null) {
        resolve(p);
      }
    }

    int resolutions(int payload) {
      AtomicInteger n = resolved.get(payload);
      return n == null ? 0 : n.get();
    }
  }

  enum Event { DECIDED, TIMEOUT, LATE_TIMEOUT, ERROR, TASKS, REENTER, COMPLETE }

  @Test
  void everyOrderOfEventsActsOnTheDecisionOnce() {
    Random random = new Random(20261201);
    for (int i = 0; i < 20_000; i++) {
      Run run = new Run(random.nextBoolean(), random.nextBoolean());
      boolean mapped = random.nextInt(5) > 0; // else the dispatch skips the filter
      List<Event> pending = new ArrayList<>(List.of(Event.DECIDED, Event.TASKS, Event.COMPLETE));
      if (random.nextBoolean()) {
        pending.add(Event.TIMEOUT);
      }
      if (random.nextInt(4) == 0) {
        pending.add(Event.ERROR);
      }
      if (random.nextInt(4) == 0) {
        pending.add(Event.LATE_TIMEOUT); // a timer that fires after the cycle was over
      }
      if (mapped) {
        pending.add(Event.REENTER);
      }
      List<Event> order = new ArrayList<>(); // the events delivered, in order
      boolean timeoutDecided = false;
      boolean errorFirst = false;
      int steps = 0;
      while (!pending.isEmpty()) {
        assertTrue(++steps < 1_000, "the run ends: " + order + " pending " + pending);
        Event e = pending.remove(random.nextInt(pending.size()));
        if (!deliverable(e, run, mapped, order)) {
          boolean never = run.async.over() && (e == Event.TIMEOUT || e == Event.ERROR
              || (e == Event.REENTER && run.async.dispatches.get() == 0));
          if (!never && !pending.isEmpty()) {
            pending.add(e); // it comes later: after what makes it possible
          }
          continue; // (or never: the cycle ended otherwise)
        }
        order.add(e);
        boolean waiting = run.wait.state() == AsyncWait.State.WAITING;
        switch (e) {
          case DECIDED -> run.wait.decided(run.decision);
          case TIMEOUT, LATE_TIMEOUT -> {
            timeoutDecided |= waiting;
            run.wait.onTimeout(null);
          }
          case ERROR -> {
            errorFirst |= waiting;
            run.wait.onError(null);
          }
          case TASKS -> run.async.takeTasks().forEach(Runnable::run);
          case REENTER -> run.reenter();
          case COMPLETE -> run.wait.onComplete(null);
        }
        if (run.async.hasTasks() && !pending.contains(Event.TASKS)) {
          pending.add(Event.TASKS); // a start() task the container will run
        }
      }
      check(run, order, mapped, timeoutDecided, errorFirst);
    }
  }

  /**
   * Whether a container can deliver {@code e} now: the re-entry only after a dispatch; completion
   * only once the cycle is over (after the re-entry, when the filter is mapped for ASYNC); a
   * timeout or an error only while the cycle is on (LATE_TIMEOUT: also after, a timer firing late).
   */
  private static boolean deliverable(Event e, Run run, boolean mapped, List<Event> order) {
    boolean over = run.async.over();
    return switch (e) {
      case REENTER -> run.async.dispatches.get() == 1;
      case COMPLETE -> over && (!mapped || run.async.dispatches.get() == 0 || order.contains(Event.REENTER));
      case TIMEOUT, ERROR -> !over;
      default -> true;
    };
  }

  private static void check(Run run, List<Event> order, boolean mapped, boolean timeoutDecided, boolean errorFirst) {
    String what = order + " decision " + run.decision + " timeout " + run.timeout + " mapped " + mapped;
    int writes = run.writes.get();
    int dispatches = run.async.dispatches.get();
    assertTrue(writes <= 1, "written once at most: " + what);
    assertTrue(writes + dispatches <= 1, "written or dispatched, never both: " + what);
    assertEquals(0, run.async.refused.get(), "never asked to dispatch or complete twice: " + what);
    if (!errorFirst && !order.contains(Event.ERROR)) {
      assertEquals(1, writes + dispatches, "acted on: " + what);
      if (writes == 1) {
        assertEquals(1, run.async.completes.get(), "a written answer is completed: " + what);
      }
    }
    if (errorFirst) {
      assertEquals(0, writes + dispatches, "a client gone while waiting gets nothing: " + what);
      assertEquals(1, run.async.completes.get(), "and its request is completed: " + what);
    }
    if (run.decision instanceof AsyncWait.Proceed<Integer>) {
      assertEquals(1, run.resolutions(1), "the decision's proceed resumed or dropped exactly once: " + what);
    }
    if (run.timeout instanceof AsyncWait.Proceed<Integer>) {
      assertEquals(timeoutDecided ? 1 : 0, run.resolutions(2), "the timeout's proceed, once if it decided: " + what);
    }
    if (dispatches == 1 && !mapped) {
      assertEquals(1, run.notResumed.get(), "a dispatch that skipped the filter is found out: " + what);
    }
    if (mapped && dispatches == 1) {
      assertEquals(0, run.notResumed.get(), what);
    }
  }

  @Test
  void theDecisionTheTimeoutAndTheClientLeavingRaceOnThreeThreads() throws Exception {
    ExecutorService threads = Executors.newFixedThreadPool(3);
    try {
      Random random = new Random(7);
      for (int i = 0; i < 2_000; i++) {
        Run run = new Run(random.nextBoolean(), random.nextBoolean());
        boolean withError = random.nextBoolean();
        CyclicBarrier together = new CyclicBarrier(3);
        List<Future<?>> racing = new ArrayList<>();
        racing.add(threads.submit(() -> {
          together.await();
          run.wait.decided(run.decision);
          return null;
        }));
        racing.add(threads.submit(() -> {
          together.await();
          if (!run.async.over()) {
            run.wait.onTimeout(null);
          }
          return null;
        }));
        racing.add(threads.submit(() -> {
          together.await();
          if (withError && !run.async.over()) {
            run.wait.onError(null);
          }
          return null;
        }));
        for (Future<?> f : racing) {
          f.get(10, TimeUnit.SECONDS);
        }
        run.async.takeTasks().forEach(Runnable::run);
        if (run.async.dispatches.get() == 1) {
          run.reenter();
        }
        if (run.async.over()) {
          run.wait.onComplete(null);
        }
        String what = "run " + i + " decision " + run.decision + " timeout " + run.timeout + " error " + withError;
        int writes = run.writes.get();
        int dispatches = run.async.dispatches.get();
        assertTrue(writes + dispatches <= 1, what);
        assertEquals(0, run.async.refused.get(), what);
        if (!withError) {
          assertEquals(1, writes + dispatches, "acted on: " + what);
        } else {
          assertTrue(writes + dispatches == 1 || run.async.completes.get() == 1, "acted on or completed: " + what);
        }
        int proceeds = run.resolutions(1) + run.resolutions(2);
        assertTrue(run.resolutions(1) <= 1 && run.resolutions(2) <= 1, what);
        if (run.decision instanceof AsyncWait.Proceed<Integer>) {
          assertEquals(1, run.resolutions(1), "the decision's proceed resumed or dropped exactly once: " + what);
        }
        assertTrue(proceeds <= 2, what);
        assertEquals(0, run.notResumed.get(), what);
      }
    } finally {
      threads.shutdownNow();
      assertTrue(threads.awaitTermination(10, TimeUnit.SECONDS));
    }
  }
}
