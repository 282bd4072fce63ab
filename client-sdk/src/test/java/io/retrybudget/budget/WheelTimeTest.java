package io.retrybudget.budget;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.Test;

class WheelTimeTest {
  @Test
  void tasksRunInTimeThenInTheOrderScheduledNearOrFar() {
    WheelTime t = new WheelTime(100);
    List<String> ran = new ArrayList<>();
    t.at(70_000, () -> ran.add("far " + t.millis())); // beyond the wheel's 65,536 slots
    t.at(5, () -> ran.add("a " + t.millis()));
    t.at(5, () -> {
      ran.add("b " + t.millis());
      t.at(0, () -> ran.add("c " + t.millis())); // no delay: in the same millisecond
    });
    t.at(65_536, () -> ran.add("one turn " + t.millis())); // a whole turn of the wheel: not run early
    t.schedule(() -> ran.add("ns " + t.millis()), 1); // 1 ns rounds up to 1 ms
    t.advanceTo(104);
    assertEquals(List.of("ns 101"), ran);
    t.advanceTo(200_000);
    assertEquals(List.of("ns 101", "a 105", "b 105", "c 105", "one turn 65636", "far 70100"), ran);
    assertEquals(200_000, t.millis());
  }

  @Test
  void cancelledTasksAndRepeatsStop() {
    WheelTime t = new WheelTime(0);
    List<Long> ticks = new ArrayList<>();
    EngineTimer.Cancel every = t.every(() -> ticks.add(t.millis()), 10, 500);
    t.at(3, () -> ticks.add(-1L)).cancel();
    t.advanceTo(1_010);
    every.cancel();
    t.advanceTo(5_000);
    assertEquals(List.of(10L, 510L, 1_010L), ticks);
  }

  @Test
  void withinTimesOutACallUnlessItIsAnswered() {
    WheelTime t = new WheelTime(0);
    CompletableFuture<String> slow = new CompletableFuture<>();
    CompletableFuture<String> copy = t.within(slow, 20);
    t.advanceTo(19);
    assertFalse(copy.isDone());
    t.advanceTo(20);
    assertTrue(copy.isCompletedExceptionally());
    assertTrue(copy.handle((v, e) -> e instanceof TimeoutException).join());
    CompletableFuture<String> answered = t.within(CompletableFuture.completedFuture("ok"), 20);
    assertEquals("ok", answered.join());
    long before = t.tasksRun();
    t.advanceTo(100);
    assertEquals(before, t.tasksRun(), "no timer left behind for an answered call");
  }
}
