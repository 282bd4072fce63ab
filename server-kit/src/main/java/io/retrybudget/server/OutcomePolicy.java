package io.retrybudget.server;

/**
 * Which answers are stored and replayed, and which release the claim so that the next duplicate
 * executes again. Whatever the policy, an answer the handler marked {@linkplain
 * IdempotencyContext#rejectedBeforeExecuting() rejected before executing} is never stored. A
 * handler that failed without an answer (a failed future, an exception) counts as a 500: stored as
 * {@code urn:retrybudget:problem:handler-failed} where the policy stores 500, else released.
 */
@FunctionalInterface
public interface OutcomePolicy {
  /**
   * The default. Stores 2xx, 3xx and the 4xx that are the request's final answer (401, 402, 403,
   * 404, 410, ...); releases 5xx, the 4xx that mean "not now" (408, 409, 425, 429) and the two
   * validation answers 400 and 422: as Stripe, a request refused before the endpoint started
   * executing is not saved, so the corrected request may reuse its key. Reasoning for 5xx: clients
   * (this SDK among them) retry 5xx and 429 precisely to get another execution; replaying a stored
   * failure for 24 h would turn one transient error into a day of them. The price: a handler that
   * committed its side effect and then failed with a 5xx (or an exception) runs again on the retry,
   * and one that returns 400 or 422 after its side effect is re-run too. Handlers that cannot make
   * their writes transactional should choose {@link #STORE_ALL}.
   */
  OutcomePolicy STANDARD = status -> status < 500 && status != 400 && status != 408 && status != 409
      && status != 422 && status != 425 && status != 429;

  /**
   * Stores every answer, 5xx included, and a failure without an answer as a 500 (Stripe's choice):
   * a retry never re-runs an attempt that started executing. Validation refusals stay unstored only
   * when the handler says so ({@link IdempotencyContext#rejectedBeforeExecuting()}).
   */
  OutcomePolicy STORE_ALL = status -> true;

  /** True to store the answer with this status, false to release the claim. */
  boolean store(int status);
}
