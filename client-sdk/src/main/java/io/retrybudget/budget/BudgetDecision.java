package io.retrybudget.budget;

/**
 * The answer to a permit request. The common answers are shared constants: asking costs no
 * allocation beyond the store's own.
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

  private final Reason reason;

  private BudgetDecision(Reason reason) {
    this.reason = reason;
  }

  public static BudgetDecision of(Reason reason) {
    return BY_REASON[reason.ordinal()];
  }

  public boolean granted() {
    return reason.granted;
  }

  public Reason reason() {
    return reason;
  }

  @Override
  public String toString() {
    return "BudgetDecision{" + reason + "}";
  }
}
