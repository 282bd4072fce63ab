package io.retrybudget.relay;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.internal.ResendCounts;
import io.retrybudget.budget.redis.protocol.BudgetCall;

/**
 * The counts a relay received from its clients (and its own grants while cut off) that Redis has not
 * applied yet, and the first attempts it gave up as lost ({@link BudgetRelay}). Each call to Redis
 * takes them all ({@link #take}); a call Redis did not apply gives its counts back. First attempts are
 * kept by when they came ({@link ResendCounts}), and a call takes only those of the last window: Redis
 * puts what a call brings in its window's current bucket, so a relay cut off for a minute would
 * otherwise bring six windows of its clients' first attempts as one (six times the ratio's retries for
 * the next window, right after Redis is back); the older ones are lost (the safe side). Pure, not
 * thread-safe.
 */
final class PendingSums {
  private ResendCounts kept = new ResendCounts(10_000); // first attempts, by when they came
  private long staleBefore; // first attempts a replaced ResendCounts dropped
  private long denied;
  private long retries;
  private long refusedDraws; // denials budget.lua counted for the relay's own draws: taken off the next reports
  private long lost;
  private BudgetCall lastTaken; // the last call taken, and its first attempts by when they came
  private long[][] lastRows = new long[0][];
  private long lastRowsWindow;

  /** Counts received at {@code now} to go with the next call. */
  void add(long now, long requests, long denied, long retries) {
    if (requests > 0) {
      kept.add(now, requests, 0, 0);
    }
    this.denied += denied;
    this.retries += retries;
  }

  /**
   * The budget's window is {@code windowMillis}: first attempts older than it are not sent. When it
   * changes, those kept are kept for the new window by when they came ({@link ResendCounts#withWindow}).
   */
  void window(long windowMillis) {
    if (windowMillis != kept.windowMillis()) {
      kept = kept.withWindow(windowMillis);
    }
  }

  /**
   * A call of the relay's own that Redis did not apply, given back at {@code now}: its counts go with the
   * next, its first attempts by when they came (as taken), so that calls given back again and again do not
   * keep them younger than they are (a relay whose calls were answered "stale" for a minute sent them as
   * the last second's); those of a call not taken here, as if they came now.
   */
  void giveBack(BudgetCall sent, long now) {
    if (sent == lastTaken) {
      kept.keep(lastRows, lastRowsWindow, sent.requests(), 0, 0, true);
      add(now, 0, sent.denied(), sent.retries());
    } else {
      add(now, sent.requests(), sent.denied(), sent.retries());
    }
  }

  /** budget.lua refused a draw of {@code need} and counted it as a denial: as many clients' denials stay out. */
  void refusedDraw(long need) {
    refusedDraws += need;
  }

  /** Whether nothing waits to be sent. */
  boolean empty() {
    return requests() == 0 && denied == 0 && retries == 0;
  }

  /**
   * The relay's call at {@code now} taking every count pending, drawing {@code want} permits (an ask of
   * one when it draws). First attempts that came a window or more ago are lost, and so is what one call
   * may not report (the trust model's cap, 10^6 or more of a count), so that the call closes its batch
   * with every count of it ({@link RelayBatches}).
   */
  BudgetCall take(String name, long want, BudgetConfig seed, long now) {
    long offset = Math.min(denied, refusedDraws);
    refusedDraws -= offset;
    denied -= offset;
    long requests = 0;
    long[][] rows = kept.take(now, 0, 0, 0); // those that came a window or more ago dropped
    for (long[] row : rows) {
      requests += row[1];
    }
    BudgetCall c = new BudgetCall(name, requests, denied, retries, want > 0 ? 1 : 0, want, seed);
    lost += requests - c.requests();
    long window = kept.windowMillis();
    clear();
    lastTaken = c;
    lastRows = rows;
    lastRowsWindow = window;
    return c;
  }

  /**
   * Every count pending given up (Redis may no longer be able to tell whether it applied them), but the
   * retries granted here: reported twice at worst (the safe side); never reported, an over-grant.
   */
  void giveUp() {
    lost += kept.requests();
    long keep = retries;
    clear();
    retries = keep;
  }

  /** First attempts of a call given up as lost (it may have been applied). */
  void lost(long requests) {
    lost += requests;
  }

  /** First attempts waiting to be sent (those a window old included, until a call drops them). */
  long requests() {
    return kept.requests();
  }

  /** First attempts given up as lost, or dropped as a window old. */
  long lost() {
    return lost + staleBefore + kept.stale();
  }

  private void clear() {
    renew(kept.windowMillis());
    denied = 0;
    retries = 0;
  }

  /** An empty ResendCounts for {@code windowMillis}, the old one's stale count kept. */
  private void renew(long windowMillis) {
    staleBefore += kept.stale();
    kept = new ResendCounts(windowMillis);
  }
}
