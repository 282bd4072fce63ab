package io.retrybudget.budget.redis.protocol;

/**
 * A budget's keys in Redis hold something the scripts refuse (a NaN or out-of-range number, a key of
 * the wrong type): the script wrote nothing and named the key and field. Redis itself is fine; the
 * budget must be fixed (PUT its configuration, or DELETE it).
 */
public final class BrokenBudgetException extends RuntimeException {
  private static final long serialVersionUID = 1L;
  private final String budget;
  private final String key;
  private final String field;

  public BrokenBudgetException(String budget, String key, String field, String detail) {
    super("budget '" + budget + "' is broken in Redis: key " + key + ", field " + field + " " + detail);
    this.budget = budget;
    this.key = key;
    this.field = field;
  }

  public String budget() {
    return budget;
  }

  public String key() {
    return key;
  }

  /** The hash field (or {@code type} for a key of the wrong type, {@code slotN} for the window ring). */
  public String field() {
    return field;
  }
}
