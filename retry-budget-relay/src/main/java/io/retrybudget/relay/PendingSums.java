package io.retrybudget.relay;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.redis.protocol.BudgetCall;

/**
 * The counts a relay received from its clients (and its own grants while cut off) that Redis has not
 * applied yet, and the first attempts it gave up as lost ({@link BudgetRelay}). Each call to Redis
 * takes them all ({@link #take}); a call Redis did not apply gives its counts back. Pure, not
 * thread-safe.
 */
final class PendingSums {
  private long requests;
  private long denied;
  private long retries;
  private long refusedDraws; // denials budget.lua counted for the relay's own draws: taken off the next reports
  private long lost;

  /** Counts received to go with the next call. */
  void add(long requests, long denied, long retries) {
    this.requests += requests;
    this.denied += denied;
    this.retries += retries;
  }

  /** A call of the relay's own that Redis did not apply: its counts go with the next. */
  void giveBack(BudgetCall sent) {
    add(sent.requests(), sent.denied(), sent.retries());
  }

  /** budget.lua refused a draw of {@code need} and counted it as a denial: as many clients' denials stay out. */
  void refusedDraw(long need) {
    refusedDraws += need;
  }

  /** Whether nothing waits to be sent. */
  boolean empty() {
    return requests == 0 && denied == 0 && retries == 0;
  }

  /**
   * The relay's call taking every count pending, drawing {@code want} permits (an ask of one when it
   * draws). What one call may not report (the trust model's cap, 10^6 or more of a count) is lost, so
   * that the call closes its batch with every count of it ({@link RelayBatches}).
   */
  BudgetCall take(String name, long want, BudgetConfig seed) {
    long offset = Math.min(denied, refusedDraws);
    refusedDraws -= offset;
    denied -= offset;
    BudgetCall c = new BudgetCall(name, requests, denied, retries, want > 0 ? 1 : 0, want, seed);
    lost += requests - c.requests();
    clear();
    return c;
  }

  /**
   * Every count pending given up (Redis may no longer be able to tell whether it applied them), but the
   * retries granted here: reported twice at worst (the safe side); never reported, an over-grant.
   */
  void giveUp() {
    lost += requests;
    long keep = retries;
    clear();
    retries = keep;
  }

  /** First attempts of a call given up as lost (it may have been applied). */
  void lost(long requests) {
    lost += requests;
  }

  /** First attempts waiting to be sent. */
  long requests() {
    return requests;
  }

  /** First attempts given up as lost. */
  long lost() {
    return lost;
  }

  private void clear() {
    requests = 0;
    denied = 0;
    retries = 0;
  }
}
