package io.retrybudget.budget;

import java.time.Duration;
import java.util.Optional;

/**
 * The answer to a permit request. The common answers are shared constants: asking costs no
 * allocation beyond the store's own. A refusal may also say when the budget expects its next
 * permit ({@link #nextPermitIn()}); such a refusal is an instance of its own, so compare decisions
 * by {@link #reason()}, not by identity.
 */
public final class BudgetDecision {

  /** Why a decision was made; denial reasons name the metric tag {@code reason}. */
  public enum Reason {
    /** The shared budget had allowance. */
    GRANTED(true, "granted"),
    /** The shared budget is in shadow mode and had none: granted, counted as "would deny". */
    GRANTED_SHADOW(true, "shadow"),
    /** The store was unreachable and the fallback granted it. */
    GRANTED_FALLBACK(true, "fallback"),
    /** The shared budget had no allowance left. */
    DENIED_EXHAUSTED(false, "exhausted"),
    /** The budget answered "exhausted" a moment ago: refused locally without asking again. */
    DENIED_EXHAUSTED_CACHED(false, "exhausted_cached"),
    /** The store was unreachable and the fallback refused it. */
    DENIED_FALLBACK(false, "fallback"),
    /**
     * A client-side retry throttle refused it before the shared budget was asked: most recent
     * retries of this client failed ({@code SuccessAwareBudget}, {@link AdaptiveThrottle}). The
     * shared budget may still have allowance; it is not counted there as denied.
     */
    DENIED_THROTTLED(false, "throttled");

    private final boolean granted;
    private final String tag;

    Reason(boolean granted, String tag) {
      this.granted = granted;
      this.tag = tag;
    }

    public boolean granted() {
      return granted;
    }

    /** Lower-case name for metric tags and logs. */
    public String tag() {
      return tag;
    }
  }

  private static final BudgetDecision[] BY_REASON = new BudgetDecision[Reason.values().length];

  static {
    for (Reason reason : Reason.values()) {
      BY_REASON[reason.ordinal()] = new BudgetDecision(reason);
    }
  }

  public static final BudgetDecision GRANTED = of(Reason.GRANTED);
  public static final BudgetDecision GRANTED_SHADOW = of(Reason.GRANTED_SHADOW);
  public static final BudgetDecision GRANTED_FALLBACK = of(Reason.GRANTED_FALLBACK);
  public static final BudgetDecision DENIED_EXHAUSTED = of(Reason.DENIED_EXHAUSTED);
  public static final BudgetDecision DENIED_EXHAUSTED_CACHED = of(Reason.DENIED_EXHAUSTED_CACHED);
  public static final BudgetDecision DENIED_FALLBACK = of(Reason.DENIED_FALLBACK);
  public static final BudgetDecision DENIED_THROTTLED = of(Reason.DENIED_THROTTLED);

  /** No estimate of the next permit. */
  private static final long NO_ESTIMATE = -1;

  private final Reason reason;
  private final long nextPermitMillis;

  private BudgetDecision(Reason reason) {
    this(reason, NO_ESTIMATE);
  }

  private BudgetDecision(Reason reason, long nextPermitMillis) {
    this.reason = reason;
    this.nextPermitMillis = nextPermitMillis;
  }

  /** The shared decision of this reason (it carries no estimate of the next permit). */
  public static BudgetDecision of(Reason reason) {
    return BY_REASON[reason.ordinal()];
  }

  /**
   * A refusal that says when the budget expects its next permit: {@code nextPermitMillis} after this
   * decision (0: it may have one now, e.g. when a refusal was reused while the budget refilled). A
   * negative value means no estimate (the budget refills only with new first attempts and has none,
   * or cannot tell), and gives the shared decision.
   *
   * @throws IllegalArgumentException for a reason that grants
   */
  public static BudgetDecision denied(Reason reason, long nextPermitMillis) {
    if (reason.granted) {
      throw new IllegalArgumentException("a refusal needs a denying reason, not " + reason);
    }
    return nextPermitMillis < 0 ? of(reason) : new BudgetDecision(reason, nextPermitMillis);
  }

  public boolean granted() {
    return reason.granted;
  }

  public Reason reason() {
    return reason;
  }

  /**
   * For a refusal: how long after this decision the budget expects to grant a permit again, at its
   * present refill rate: what Redis answered ({@code next_grant_ms} of lua/budget.lua, less the time
   * since when a refusal is reused), or what the local budget or LOCAL fallback computes. An
   * estimate, not a reservation: the fleet's other clients may take that permit first. Empty for
   * grants and when there is no estimate: a throttle's refusal, the DENY fallback, a call whose answer
   * was in doubt, an ask not sent to Redis (sampled out), or a budget that refills only with new
   * first attempts and has none (no floor).
   */
  public Optional<Duration> nextPermitIn() {
    return nextPermitMillis < 0 ? Optional.empty() : Optional.of(Duration.ofMillis(nextPermitMillis));
  }

  @Override
  public String toString() {
    return "BudgetDecision{" + reason + (nextPermitMillis < 0 ? "" : ", next permit in " + nextPermitMillis + " ms") + "}";
  }
}
