package io.retrybudget.internal;

import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;

/** The SDK's timer threads. */
public final class Schedulers {
  private Schedulers() {}

  /**
   * One daemon thread that drops cancelled tasks at once: a call that ends early must not leave its
   * timeout queued (and its memory held) until the time it would have fired.
   */
  public static ScheduledExecutorService daemon(String name) {
    ScheduledThreadPoolExecutor executor = new ScheduledThreadPoolExecutor(1, r -> {
      Thread t = new Thread(r, name);
      t.setDaemon(true);
      return t;
    });
    executor.setRemoveOnCancelPolicy(true);
    executor.setExecuteExistingDelayedTasksAfterShutdownPolicy(false);
    return executor;
  }
}
