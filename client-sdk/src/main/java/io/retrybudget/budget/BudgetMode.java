package io.retrybudget.budget;

/** How a budget treats an extra attempt it has no allowance for. */
public enum BudgetMode {
  /** Refuse it (the default). */
  ENFORCE("enforce"),
  /** Grant it anyway and count it as "would deny": for rolling a budget out safely. */
  SHADOW("shadow");

  private final String wireName;

  BudgetMode(String wireName) {
    this.wireName = wireName;
  }

  /** The name stored in Redis and used over HTTP. */
  public String wireName() {
    return wireName;
  }

  /** Parses a wire name; throws {@link IllegalArgumentException} naming the field {@code mode}. */
  public static BudgetMode fromWireName(String name) {
    for (BudgetMode mode : values()) {
      if (mode.wireName.equals(name)) {
        return mode;
      }
    }
    throw new IllegalArgumentException("mode must be 'enforce' or 'shadow', was '" + name + "'");
  }
}
