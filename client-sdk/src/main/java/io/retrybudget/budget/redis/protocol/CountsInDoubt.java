package io.retrybudget.budget.redis.protocol;

/**
 * The number and counts of one of a client's calls of unknown fate on one way (a timeout, a connection
 * lost with it in flight: Redis, or a relay, may or may not have applied it), carried by later calls on
 * the same way (a group of budget.lua's ARGV[14..]; a relay's {@code ReportLedger} judges it finer).
 * budget.lua adds them when the carrier is applied while the client's entry is held with a last number
 * below {@link #seq} ({@link #applies}): a number at or below the last is stale and applies nothing,
 * so the entry only grows and that call never ran; arriving later it is stale. Without an entry they
 * are dropped (the safe side). Carried again, they are never added twice.
 *
 * @param seq the number the call of unknown fate last went with (at least 1)
 * @param requests its first attempts
 * @param denied its refusals
 * @param retries its fallback grants
 */
public record CountsInDoubt(long seq, long requests, long denied, long retries) {
  public CountsInDoubt {
    if (seq < 1 || requests < 0 || denied < 0 || retries < 0) {
      throw new IllegalArgumentException("bad counts in doubt: seq=" + seq + ", requests=" + requests + ", denied="
          + denied + ", retries=" + retries);
    }
  }

  /** The counts of {@code call}, which last went with number {@code seq}. */
  public static CountsInDoubt of(long seq, BudgetCall call) {
    return new CountsInDoubt(seq, call.requests(), call.denied(), call.retries());
  }

  /**
   * budget.lua's rule: whether the counts are added to a carrier with number {@code carrierSeq} (above
   * {@link #seq}) applied while the client's entry holds {@code lastSeq} (null: no entry).
   */
  public boolean applies(Long lastSeq, long carrierSeq) {
    return lastSeq != null && lastSeq < seq && seq < carrierSeq;
  }

  /** Whether there is anything to carry. */
  public boolean any() {
    return requests > 0 || denied > 0 || retries > 0;
  }
}
