package io.retrybudget.relay;

import io.retrybudget.budget.redis.protocol.BudgetCall;

/**
 * A relay's call to Redis whose fate is unknown (it timed out, or its connection was lost with it in
 * flight): held to be sent again, the same call with the same number, until Redis answers it, so its
 * counts are applied once whether the first went through or not (budget.lua refuses a number it has
 * seen: a stale answer says the first was applied). Held at most {@link #LIMIT_MILLIS}, well inside
 * the two fleet epochs (4 minutes) Redis keeps a client's last number; after that its counts are
 * given up as lost (the safe side). Pure: time comes in as an argument.
 */
final class CallInDoubt {
  /** How long a call in doubt is sent again before its counts are given up. */
  static final long LIMIT_MILLIS = 60_000;

  private BudgetCall call;
  private long since;

  /** {@code sent}'s fate is unknown at {@code now}; a call sent again keeps its first time. */
  void hold(BudgetCall sent, long now) {
    if (call != sent) {
      call = sent;
      since = now;
    }
  }

  /** Whether {@code sent} is the call held. */
  boolean is(BudgetCall sent) {
    return call != null && call == sent;
  }

  boolean held() {
    return call != null;
  }

  /**
   * The call held, to be sent again at {@code now}; null when none is, or when it was held too long:
   * {@link #LIMIT_MILLIS}, or the budget's window ({@code windowMillis}) if shorter.
   */
  BudgetCall again(long now) {
    return again(now, LIMIT_MILLIS);
  }

  /** As {@link #again(long)}, given up once held {@code windowMillis} (the budget's window) if shorter. */
  BudgetCall again(long now, long windowMillis) {
    return call != null && now - since < Math.min(LIMIT_MILLIS, windowMillis) ? call : null;
  }

  /** Gives the call up (answered, or held too long): the call it was, or null. */
  BudgetCall release() {
    BudgetCall c = call;
    call = null;
    return c;
  }
}
