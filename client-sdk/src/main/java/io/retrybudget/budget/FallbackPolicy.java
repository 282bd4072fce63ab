package io.retrybudget.budget;

/** What a budget client decides while Redis is unreachable or too slow. */
public enum FallbackPolicy {
  /**
   * Decide on this client's own counts: the budget's ratio over its own first attempts plus its
   * share of the fleet floor (the default). Never multiplies the fleet floor by the client count.
   */
  LOCAL,
  /** Grant every extra attempt (availability first). */
  ALLOW,
  /** Refuse every extra attempt (protection first). */
  DENY
}
