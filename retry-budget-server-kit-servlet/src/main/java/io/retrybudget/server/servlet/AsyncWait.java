package io.retrybudget.server.servlet;

import io.retrybudget.server.StoredResponse;
import jakarta.servlet.AsyncContext;
import jakarta.servlet.AsyncEvent;
import jakarta.servlet.AsyncListener;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;

/**
 * One wait of a servlet filter for Redis, off the container's thread (Servlet async: the pattern of
 * Jetty's {@code QoSFilter} and Spring's async requests, a request attribute marking the decision
 * taken): {@code startAsync}, and when the decision comes — on whatever thread — either its answer
 * is written on a container thread ({@link AsyncContext#start}) and the request completed, or the
 * request is dispatched again ({@link AsyncContext#dispatch()}) and the filter, seeing this wait
 * in its attribute, {@link #resume}s and continues the chain with the decision.
 *
 * <p>An explicit state machine, one lock; actions (writes, dispatch, complete, the caller's
 * callbacks) run outside it:
 * <pre>
 * WAITING  --decided(answer)-->  ANSWERING --the write runs (once)--> ENDED
 * WAITING  --decided(proceed)--> DISPATCHED --resume--> RESUMED --complete--> ENDED
 * WAITING  --timeout--> as decided({@code onTimeout})  (the action runs on the timeout's thread)
 * WAITING  --error (client gone)--> ENDED, complete(); the decision, when it comes, is late
 * ANSWERING / DISPATCHED whose action has not run yet --timeout--> the action runs there (once)
 * ANSWERING / DISPATCHED whose action has not run yet --error--> ENDED, complete(); a proceed is dropped
 * DISPATCHED --complete, never resumed--> ENDED, the proceed is dropped (the filter is not mapped
 *              for ASYNC dispatches: {@code notResumed})
 * any other state --decided--> late: {@code dropped} gets a proceed (its claim must be released)
 * </pre>
 * Invariant: a request in WAITING has its decision outstanding and an async timeout armed; every
 * decision is acted on exactly once — written, resumed, or handed to {@code dropped} — and every
 * response is written by exactly one party.
 *
 * @param <P> what a "proceed" carries to the resumed filter (the tie's won, an idempotency execution)
 */
final class AsyncWait<P> implements AsyncListener {
  /** What the filter does with a request: answer it now, or go on with {@code payload}. */
  sealed interface Step<P> {}

  /** Writes an answer to a response that has not been committed. */
  interface Writer {
    void write(HttpServletResponse response) throws IOException;
  }

  record Answer<P>(Writer writer) implements Step<P> {
    Answer(StoredResponse response) {
      this(r -> IdempotencyFilter.write(r, response));
    }
  }

  record Proceed<P>(P payload) implements Step<P> {}

  enum State { WAITING, ANSWERING, DISPATCHED, RESUMED, ENDED }

  private final AsyncContext async;
  private final HttpServletResponse response;
  private final Step<P> onTimeout;
  private final Consumer<P> dropped;
  private final Runnable notResumed;
  private State state = State.WAITING;
  private Step<P> decision;
  private boolean acted; // the decision's action has been claimed by one thread

  private AsyncWait(AsyncContext async, HttpServletResponse response, Step<P> onTimeout, Consumer<P> dropped,
      Runnable notResumed) {
    this.async = async;
    this.response = response;
    this.onTimeout = onTimeout;
    this.dropped = dropped;
    this.notResumed = notResumed;
  }

  /**
   * Puts the request into async mode and waits for {@code decision} off this thread, stored under
   * {@code attribute}. {@code onTimeout}: what the request gets when no decision came within
   * {@code timeoutMillis}; {@code dropped}: a proceed nobody will act on (late, client gone, not
   * resumed); {@code notResumed}: told when a dispatched request completed without coming back.
   * Returns null when the request cannot go async ({@code startAsync} refused): wait blocking then.
   */
  static <P> AsyncWait<P> start(HttpServletRequest request, HttpServletResponse response, String attribute,
      CompletableFuture<Step<P>> decision, long timeoutMillis, Step<P> onTimeout, Consumer<P> dropped,
      Runnable notResumed) {
    AsyncContext async;
    try {
      async = request.startAsync(request, response);
    } catch (IllegalStateException notNow) {
      return null;
    }
    AsyncWait<P> wait = of(async, response, onTimeout, dropped, notResumed);
    async.setTimeout(timeoutMillis);
    async.addListener(wait);
    request.setAttribute(attribute, wait);
    decision.whenComplete((step, error) -> wait.decided(step != null ? step : onTimeout));
    return wait;
  }

  /** A wait on an async context already started (what {@link #start} builds; tests drive it directly). */
  static <P> AsyncWait<P> of(AsyncContext async, HttpServletResponse response, Step<P> onTimeout, Consumer<P> dropped,
      Runnable notResumed) {
    return new AsyncWait<>(async, response, onTimeout, dropped, notResumed);
  }

  /** The state, for tests and the filter's own checks. */
  synchronized State state() {
    return state;
  }

  /** The decision has come (any thread). */
  void decided(Step<P> step) {
    Runnable action;
    synchronized (this) {
      if (state != State.WAITING) {
        action = () -> drop(step);
      } else {
        decision = step;
        state = step instanceof Answer<P> ? State.ANSWERING : State.DISPATCHED;
        action = this::actOnContainer;
      }
    }
    action.run();
  }

  /** The first half of acting: a dispatch is asked for at once; a write is handed to a container thread. */
  private void actOnContainer() {
    if (decision instanceof Answer<P>) {
      try {
        async.start(this::actHere);
      } catch (RuntimeException gone) {
        // the request ended meanwhile (an error completed it), or the container refused the task:
        // then the async timeout still comes and writes it (actHere there)
      }
    } else {
      actHere();
    }
  }

  /** Runs the decision's action on this thread, unless another thread has claimed it. */
  private void actHere() {
    Step<P> step;
    synchronized (this) {
      if (acted || (state != State.ANSWERING && state != State.DISPATCHED)) {
        return;
      }
      acted = true;
      step = decision;
      if (state == State.ANSWERING) {
        state = State.ENDED;
      }
    }
    if (step instanceof Answer<P> a) {
      try {
        a.writer().write(response);
      } catch (IOException | RuntimeException clientGone) {
        // nothing more to send to; complete() below ends the request either way
      }
      completeQuietly();
    } else {
      try {
        async.dispatch();
      } catch (IllegalStateException gone) {
        synchronized (this) {
          state = State.ENDED; // the request ended between the decision and the dispatch
        }
        drop(step);
      }
    }
  }

  /**
   * The filter was entered again by the dispatch: the proceed's payload, once; null when this is
   * not the dispatch of a proceed (then pass the request on untouched).
   */
  P resume() {
    synchronized (this) {
      if (state != State.DISPATCHED) {
        return null;
      }
      state = State.RESUMED;
      return ((Proceed<P>) decision).payload();
    }
  }

  @Override
  public void onTimeout(AsyncEvent event) {
    boolean act;
    synchronized (this) {
      if (state == State.WAITING) {
        decision = onTimeout;
        state = onTimeout instanceof Answer<P> ? State.ANSWERING : State.DISPATCHED;
        act = true;
      } else {
        act = !acted && (state == State.ANSWERING || state == State.DISPATCHED);
      }
    }
    if (act) {
      actHere(); // on this container thread: the timeout must end in a write + complete or a dispatch
    }
  }

  @Override
  public void onError(AsyncEvent event) {
    Step<P> droppedStep = null;
    boolean complete;
    synchronized (this) {
      switch (state) {
        case WAITING -> complete = true;
        case ANSWERING, DISPATCHED -> {
          complete = !acted;
          if (!acted && state == State.DISPATCHED) {
            droppedStep = decision;
          }
          acted = true;
        }
        default -> complete = false;
      }
      if (complete) {
        state = State.ENDED;
      }
    }
    if (droppedStep != null) {
      drop(droppedStep);
    }
    if (complete) {
      completeQuietly();
    }
  }

  @Override
  public void onComplete(AsyncEvent event) {
    Step<P> lost = null;
    synchronized (this) {
      if (state == State.DISPATCHED && acted) {
        lost = decision; // dispatched and completed, yet the filter never resumed it
      }
      if (state != State.RESUMED) {
        state = State.ENDED;
      }
    }
    if (lost != null) {
      notResumed.run();
      drop(lost);
    }
  }

  @Override
  public void onStartAsync(AsyncEvent event) {
    boolean stay;
    synchronized (this) {
      stay = state == State.DISPATCHED; // dispatched but not resumed, and the chain went async itself
    }
    if (stay) {
      event.getAsyncContext().addListener(this); // still told when it completes (else this wait is over)
    }
  }

  private void drop(Step<P> step) {
    if (step instanceof Proceed<P> p) {
      dropped.accept(p.payload());
    }
  }

  private void completeQuietly() {
    try {
      async.complete();
    } catch (IllegalStateException alreadyEnded) {
      // the container ended it first (an error): nothing to complete
    }
  }
}
