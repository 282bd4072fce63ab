package io.retrybudget.server;

/** What claiming a record answered: see {@link ClaimStore#claim}. */
public sealed interface Claim {
  /** This request holds the record; {@code fence} must accompany its completion or release. */
  record Claimed(String key, long fence, boolean takeover) implements Claim {}

  /** Another request holds it, for {@code leaseLeftMillis} more at most. */
  record Busy(long leaseLeftMillis) implements Claim {}

  /** The record belongs to a request with another fingerprint. */
  record Mismatch() implements Claim {}

  /** Finished: the stored answer. */
  record Done(StoredResponse response) implements Claim {}
}
