package io.retrybudget.spring;

/** A {@code retrybudget.*} property has a value the SDK refuses; the message names the property. */
public final class InvalidRetryBudgetPropertyException extends IllegalArgumentException {
  private final String property;

  public InvalidRetryBudgetPropertyException(String property, String problem) {
    super(property + ": " + problem);
    this.property = property;
  }

  /** The property, e.g. {@code retrybudget.budgets.payments-api.ratio}. */
  public String property() {
    return property;
  }
}
