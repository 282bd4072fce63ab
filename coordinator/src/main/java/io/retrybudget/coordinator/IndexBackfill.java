package io.retrybudget.coordinator;

import io.lettuce.core.ScanCursor;
import io.retrybudget.budget.redis.BudgetScripts;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.util.ArrayList;
import java.util.List;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * Once per coordinator start, in the background: lists in the index of budget names every budget
 * whose configuration key exists but is not listed (written before the index existed, by an older
 * version). A SCAN with MATCH {@code rb:v2:{*}:cfg} and COUNT {@link #COUNT}, one step every
 * {@link #PACE_MS} ms (so at most about 20,000 keys looked at a second, whatever Redis holds), and
 * for each name found one {@code index.lua} call, {@link #BATCH} at a time. Runs on a Vert.x context:
 * nothing waits, the event loop is never blocked. A failed step is tried again after
 * {@link #RETRY_MS} ms from the same cursor, at most {@link #MAX_FAILURES} times in a row; then the
 * backfill gives up with one WARNING (the next start tries again, and each budget is indexed at its
 * next use anyway).
 *
 * <p>States: running (one step or its timer outstanding) → done | gave up | stopped. A step's reply
 * that arrives after {@link #stop()} does nothing.
 */
final class IndexBackfill {
  private static final Logger LOG = Logger.getLogger(IndexBackfill.class.getName());
  static final long COUNT = 1000;
  static final long PACE_MS = 50;
  static final int BATCH = 100;
  static final long RETRY_MS = 1_000;
  static final int MAX_FAILURES = 60;

  enum State { RUNNING, DONE, GAVE_UP, STOPPED }

  private final Vertx vertx;
  private final Context context;
  private final BudgetScripts scripts;
  private final long paceMs;
  private volatile State state = State.RUNNING;
  private volatile long added;
  private volatile long steps;
  private int failures;
  private long timer = -1;

  private IndexBackfill(Vertx vertx, BudgetScripts scripts, long paceMs) {
    this.vertx = vertx;
    this.context = vertx.getOrCreateContext();
    this.scripts = scripts;
    this.paceMs = paceMs;
  }

  /** Starts the backfill now on a context of {@code vertx}. */
  static IndexBackfill start(Vertx vertx, BudgetScripts scripts) {
    IndexBackfill b = new IndexBackfill(vertx, scripts, PACE_MS);
    b.context.runOnContext(v -> b.step(null));
    return b;
  }

  State state() {
    return state;
  }

  /** Budgets added to the index so far. */
  long added() {
    return added;
  }

  long steps() {
    return steps;
  }

  /** Stops at the next step (on any thread); idempotent. */
  void stop() {
    context.runOnContext(v -> {
      if (state == State.RUNNING) {
        state = State.STOPPED;
      }
      if (timer >= 0) {
        vertx.cancelTimer(timer);
        timer = -1;
      }
    });
  }

  private void step(ScanCursor cursor) {
    timer = -1;
    if (state != State.RUNNING) {
      return;
    }
    steps++;
    Future.fromCompletionStage(scripts.scanConfigurations(cursor, COUNT), context)
        .compose(found -> indexAll(found.names(), 0).map(found))
        .onComplete(done -> {
          if (state != State.RUNNING) {
            return;
          }
          if (done.failed()) {
            if (++failures > MAX_FAILURES) {
              state = State.GAVE_UP;
              LOG.warning("index backfill gave up after " + MAX_FAILURES + " failed steps in a row ("
                  + added + " budgets added): " + done.cause());
              return;
            }
            LOG.log(Level.FINE, "index backfill step failed; again in " + RETRY_MS + " ms", done.cause());
            timer = vertx.setTimer(RETRY_MS, id -> step(cursor));
            return;
          }
          failures = 0;
          if (done.result().finished()) {
            state = State.DONE;
            if (added > 0) {
              LOG.info("index backfill: listed " + added + " budgets configured before the index existed");
            }
            return;
          }
          ScanCursor next = done.result().cursor();
          timer = vertx.setTimer(paceMs, id -> step(next));
        });
  }

  /** index.lua for names[from..], {@link #BATCH} at a time; a broken key is skipped (listing flags it). */
  private Future<Void> indexAll(List<String> names, int from) {
    if (from >= names.size() || state != State.RUNNING) {
      return Future.succeededFuture();
    }
    int to = Math.min(names.size(), from + BATCH);
    List<Future<Boolean>> batch = new ArrayList<>(to - from);
    for (int i = from; i < to; i++) {
      batch.add(Future.fromCompletionStage(scripts.index(names.get(i)), context)
          .recover(e -> e instanceof io.retrybudget.budget.redis.BrokenBudgetException || unwrapped(e)
              ? Future.succeededFuture(false) : Future.failedFuture(e)));
    }
    return Future.all(batch).compose(all -> {
      for (Future<Boolean> f : batch) {
        if (Boolean.TRUE.equals(f.result())) {
          added++;
        }
      }
      return indexAll(names, to);
    });
  }

  private static boolean unwrapped(Throwable e) {
    return e instanceof java.util.concurrent.CompletionException
        && e.getCause() instanceof io.retrybudget.budget.redis.BrokenBudgetException;
  }
}
