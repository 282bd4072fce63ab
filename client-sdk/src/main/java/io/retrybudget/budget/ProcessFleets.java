package io.retrybudget.budget;

import java.util.concurrent.ConcurrentHashMap;

/**
 * What one process knows of the fleet of each budget name it has live budgets of: how many of its
 * own budgets are live, how many of them have heard from Redis, and the fleet size one of them
 * learned last. Thread-safe (one atomic update per name).
 */
final class ProcessFleets {
  // per budget name with live budgets here
  private final ConcurrentHashMap<String, View> views = new ConcurrentHashMap<>();

  /**
   * Budgets of one name in this process, how many of them have heard from Redis, and the last fleet
   * size one of them learned.
   */
  private record View(int live, int heard, long learned) {}

  /** A budget of {@code name} was made. */
  void opened(String name) {
    views.compute(name, (n, view) -> view == null ? new View(1, 0, 0) : new View(view.live + 1, view.heard, view.learned));
  }

  /** A budget of {@code name} is gone ({@code heard}: it had heard from Redis). */
  void closed(String name, boolean heard) {
    views.computeIfPresent(name, (n, view) -> view.live <= 1 ? null
        : new View(view.live - 1, heard ? Math.max(0, view.heard - 1) : view.heard, view.learned));
  }

  /**
   * What this process knows of the fleet of budget {@code name}: at least its own live budgets of
   * that name (Redis counts each of them: each has its own client id), and the fleet size one of
   * them learned last, scaled by the share of this process's budgets Redis had heard from then
   * ({@code learned * live / heard}): a fleet that is still joining reports only the clients heard so
   * far, and a process that has been heard from in part assumes the rest of the fleet is as far
   * along. Once all its budgets are heard from this is the size Redis reports. 0 when none is live.
   */
  long estimate(String name) {
    View view = views.get(name);
    if (view == null) {
      return 0;
    }
    long scaled = view.learned == 0 ? 0 : (view.learned * view.live + Math.max(1, view.heard) - 1) / Math.max(1, view.heard);
    return Math.max(view.live, scaled);
  }

  /** A budget of {@code name} heard from Redis that its fleet is {@code clients} clients ({@code first}: its first reply). */
  void learned(String name, long clients, boolean first) {
    views.computeIfPresent(name, (n, view) -> !first && view.learned == clients ? view
        : new View(view.live, first ? Math.min(view.live, view.heard + 1) : view.heard, clients));
  }
}
