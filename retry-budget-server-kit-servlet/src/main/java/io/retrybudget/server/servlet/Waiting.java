package io.retrybudget.server.servlet;

/**
 * How a servlet filter of the kit waits for Redis (a tie's claim, an idempotency key's claim).
 */
public enum Waiting {
  /**
   * On the container's thread, bounded: the request's thread is held for the round trip. Works
   * with every mapping and container. The default, since it is what the filters did before.
   */
  BLOCKING,
  /**
   * Off the container's thread when the request supports async ({@code isAsyncSupported()}):
   * the filter starts Servlet async, the container's thread goes back to its pool, and when Redis
   * answers the filter either writes its answer and completes the request or dispatches it again
   * ({@code AsyncContext.dispatch()}) and continues the chain there. That dispatch is an ASYNC
   * dispatch: the filter <b>and every filter after it</b> must be mapped for
   * {@code DispatcherType.ASYNC} as well as {@code REQUEST}, else the dispatch skips them (the
   * filter finds out when such a request completes without coming back through it: it logs it
   * once, SEVERE, releases what it held and waits {@link #BLOCKING} from then on). A request
   * that does not support async is waited for {@link #BLOCKING}.
   */
  ASYNC
}
