package io.retrybudget.relay;

import io.retrybudget.budget.redis.protocol.BudgetCall;
import java.util.function.DoubleSupplier;

/**
 * The state of one budget relay's link to Redis: when its next call is due ({@link UpstreamSchedule}),
 * whether one is in flight, the call of unknown fate held to be sent again ({@link CallInDoubt}), the
 * failures in a row, and whether they cut it off (after {@link RelaySettings#failuresToCutOff}; the
 * first call Redis answers ends it). What the calls carry is {@link BudgetRelay}'s. Pure: time comes in
 * as an argument; not thread-safe.
 */
final class UpstreamLink {
  private final UpstreamSchedule schedule;
  private final CallInDoubt doubt = new CallInDoubt();
  private final int failuresToCutOff;
  private boolean inFlight;
  private int failures;
  private boolean cutOff;

  UpstreamLink(RelaySettings settings, DoubleSupplier random) {
    this.schedule = new UpstreamSchedule(settings.minUpstreamMillis(), random);
    this.failuresToCutOff = settings.failuresToCutOff();
  }

  /** When the calls are due. */
  UpstreamSchedule schedule() {
    return schedule;
  }

  /** Whether a call may go at {@code now}: one is due and none is in flight. */
  boolean mayCall(long now) {
    return !inFlight && schedule.due(now);
  }

  /**
   * The call of unknown fate, to go again at {@code now} as it was (now in flight); null when none may:
   * none held, or held {@code windowMillis} or longer (its first attempts would reach Redis a window old
   * and be counted as the current bucket's; given up instead, the safe side).
   */
  BudgetCall again(long now, long windowMillis) {
    BudgetCall again = doubt.again(now, windowMillis);
    if (again != null) {
      sent(now, again.want() > 0);
    }
    return again;
  }

  /** Gives the call in doubt up (held too long): the call it was, or null. */
  BudgetCall giveUpDoubt() {
    return doubt.release();
  }

  /** A call was sent at {@code now} ({@code draws}: it asks for permits); it is in flight. */
  void sent(long now, boolean draws) {
    inFlight = true;
    schedule.sent(now, draws);
  }

  /**
   * Redis answered {@code sent}: no failure in a row any more. Whether {@code sent} was the call in
   * doubt sent again (released: its fate is known).
   */
  boolean answered(BudgetCall sent) {
    inFlight = false;
    failures = 0;
    boolean again = doubt.is(sent);
    if (again) {
      doubt.release();
    }
    return again;
  }

  /** Ends a cut-off (Redis answered and applied a call): whether the relay was cut off. */
  boolean reconnected() {
    boolean was = cutOff;
    cutOff = false;
    return was;
  }

  /** {@code sent}'s fate is unknown at {@code now}: held to be sent again with its number. */
  void hold(BudgetCall sent, long now) {
    doubt.hold(sent, now);
  }

  /** Whether {@code sent} is the call held in doubt. */
  boolean inDoubt(BudgetCall sent) {
    return doubt.is(sent);
  }

  /** Whether a call of unknown fate is held. */
  boolean inDoubt() {
    return doubt.held();
  }

  /** Whether the call in flight is the call in doubt sent again. */
  boolean resending() {
    return doubt.held() && inFlight;
  }

  /** A call came to nothing: one more failure in a row (enough of them cut the relay off). */
  void failed() {
    inFlight = false;
    if (++failures >= failuresToCutOff) {
      cutOff = true;
    }
  }

  boolean cutOff() {
    return cutOff;
  }

  /**
   * Whether a refused ask at {@code now} brings the next call forward: connected, none in flight, and
   * no call drew within {@code coldMillis} (a cold relay).
   */
  boolean coldAndIdle(long now, long coldMillis) {
    return !cutOff && !inFlight && schedule.cold(now, coldMillis);
  }
}
