package io.retrybudget.server;

/**
 * Which answers are stored and replayed, and which release the claim so that the next duplicate
 * executes again. A handler that threw always releases (there is no answer to replay).
 */
@FunctionalInterface
public interface OutcomePolicy {
  /**
   * The default. Stores 2xx, 3xx and 4xx (the same request gets the same answer: a 400 or 422 for
   * it stays true); releases 5xx and the 4xx that mean "not now" (408, 409, 425, 429). Reasoning:
   * clients (this SDK among them) retry 5xx and 429 precisely to get another execution; replaying a
   * stored failure for 24 h would turn one transient error into a day of them. The price: a handler
   * that committed its side effect and then failed with a 5xx runs again on the retry. Handlers
   * that cannot make their writes transactional should choose {@link #STORE_ALL}. (AWS Lambda
   * Powertools releases failures the same way; Stripe stores 5xx too.)
   */
  OutcomePolicy STANDARD = status -> status < 500 && status != 408 && status != 409 && status != 425 && status != 429;

  /** Stores every answer, 5xx included (Stripe's choice): a retry never re-runs a failed attempt. */
  OutcomePolicy STORE_ALL = status -> true;

  /** True to store the answer with this status, false to release the claim. */
  boolean store(int status);
}
