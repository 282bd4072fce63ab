package io.retrybudget.retry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.BudgetDecision;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/** The transition function alone: (state, event) to (new state, actions), no threads, no timers. */
class CallStateTest {
  private static final long MS = 1_000_000L;
  private final RetryPolicy policy = RetryPolicy.builder().maxAttempts(3)
      .backoff(Duration.ofMillis(100), Duration.ofSeconds(1)).deadline(Duration.ofSeconds(1)).build();
  private final RetryPlanner planner = new RetryPlanner(policy);
  private final CompletableFuture<String> first = new CompletableFuture<>();
  private final CallState<String> state = new CallState<>(policy, planner, null, "budget", new AttemptContext(null),
      0, first);

  private List<CallState.Action> step(CallState.Event event, long now) {
    List<CallState.Action> out = new ArrayList<>();
    state.transition(event, out, now);
    return out;
  }

  private static <A> A only(List<CallState.Action> actions, Class<A> type) {
    List<CallState.Action> of = actions.stream().filter(type::isInstance).toList();
    assertEquals(1, of.size(), type.getSimpleName() + " in " + actions);
    return type.cast(of.get(0));
  }

  @Test
  void aRetryGoesRunningAskingBackingOffRunning() {
    List<CallState.Action> start = step(new CallState.Start(null, null, 0), 0);
    CallState.Watch watch = only(start, CallState.Watch.class);
    CallState.Schedule deadline = only(start, CallState.Schedule.class);
    assertEquals(Duration.ofSeconds(1).toNanos(), deadline.dueNanos(), "the backstop at the deadline");
    assertEquals(CallState.Phase.RUNNING, state.snapshot().phase());

    List<CallState.Action> failed = step(new CallState.AttemptDone(watch.attempt(), null, new IOException(),
        RetryPlanner.Verdict.RETRYABLE, 0.5, false), 10 * MS);
    assertEquals(new CallState.AskBudget(false, 1), only(failed, CallState.AskBudget.class));
    assertEquals(CallState.Phase.ASKING, state.snapshot().phase());

    assertEquals(List.of(), step(new CallState.BudgetAnswered(false, 7, BudgetDecision.GRANTED), 11 * MS),
        "an answer for another round does nothing");
    List<CallState.Action> granted = step(new CallState.BudgetAnswered(false, 1, BudgetDecision.GRANTED), 11 * MS);
    CallState.Schedule backoff = only(granted, CallState.Schedule.class);
    assertEquals(11 * MS + 50 * MS, backoff.dueNanos(), "U(0, 100 ms) at 0.5, from now");
    assertEquals(CallState.Phase.BACKING_OFF, state.snapshot().phase());

    assertEquals(List.of(), step(new CallState.BackoffOver(new CallState.Timer()), 61 * MS), "not this call's timer");
    List<CallState.Action> over = step(backoff.event(), 61 * MS);
    CallState.StartAttempt retry = only(over, CallState.StartAttempt.class);
    assertEquals(2, retry.attempt().number);
    assertEquals(2, state.snapshot().round());
  }

  @Test
  void aBackoffThatFiresTooLateEndsTheCallWithTheLastFailure() {
    CallState.Watch watch = only(step(new CallState.Start(null, null, 0), 0), CallState.Watch.class);
    IOException down = new IOException("down");
    step(new CallState.AttemptDone(watch.attempt(), null, down, RetryPlanner.Verdict.RETRYABLE, 0.5, false), 0);
    CallState.Schedule backoff = only(step(new CallState.BudgetAnswered(false, 1, BudgetDecision.GRANTED), 0),
        CallState.Schedule.class);
    List<CallState.Action> late = step(backoff.event(), Duration.ofSeconds(1).toNanos()); // at the deadline
    CallState.Complete complete = only(late, CallState.Complete.class);
    assertEquals(RetryOutcome.DEADLINE, complete.outcome());
    assertTrue(complete.failure() == down);
    assertEquals(CallState.Phase.ENDED, state.snapshot().phase());
    assertEquals(List.of(), step(new CallState.Stop(RetryOutcome.CANCELLED, null), 0), "nothing changes an ended call");
  }
}
