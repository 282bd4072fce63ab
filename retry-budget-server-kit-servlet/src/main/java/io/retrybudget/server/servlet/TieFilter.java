package io.retrybudget.server.servlet;

import io.retrybudget.server.TieGuard;
import jakarta.servlet.DispatcherType;
import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * {@link TieGuard} as a Servlet 6.1 filter: a tied copy that lost answers at once; one that runs
 * gets {@code X-Tie-Won: true} on its answer. Map it before the idempotency filter (and after the
 * admission filter). With {@link Waiting#ASYNC} the tie's claim does not hold the container's
 * thread (map this filter and those after it for {@code REQUEST} and {@code ASYNC}); with
 * {@link Waiting#BLOCKING} (the default) the thread waits for it, at most {@link #WAIT_BOUND_MILLIS}.
 * A request passes the guard once: a later dispatch of it (the servlet's own async dispatch, an
 * error page) passes untouched.
 */
public final class TieFilter implements Filter {
  /** The most a tie's claim is waited for (the claim's future ends within the store's timeout first). */
  public static final long WAIT_BOUND_MILLIS = 10_000;
  private static final System.Logger LOG = System.getLogger(TieFilter.class.getName());
  private static final Object PASSED = new Object();

  private final TieGuard ties;
  private final Waiting waiting;
  private final String attribute = TieFilter.class.getName() + "@" + Integer.toHexString(System.identityHashCode(this));
  private volatile boolean asyncBroken;

  public TieFilter(TieGuard ties) {
    this(ties, Waiting.BLOCKING);
  }

  public TieFilter(TieGuard ties, Waiting waiting) {
    this.ties = Objects.requireNonNull(ties, "ties must not be null");
    this.waiting = Objects.requireNonNull(waiting, "waiting must not be null");
  }

  @Override
  public void doFilter(ServletRequest request, ServletResponse response, FilterChain chain)
      throws IOException, ServletException {
    if (!(request instanceof HttpServletRequest req) || !(response instanceof HttpServletResponse res)
        || req.getHeader(TieGuard.TIE_HEADER) == null) {
      chain.doFilter(request, response);
      return;
    }
    Object mark = req.getAttribute(attribute);
    if (mark instanceof AsyncWait<?> wait && req.getDispatcherType() == DispatcherType.ASYNC && wait.resume() != null) {
      run(req, res, chain); // the claim's dispatch: this copy won (or the tie could not be asked)
      return;
    }
    if (mark != null) {
      chain.doFilter(request, response); // decided on an earlier pass of this request
      return;
    }
    CompletableFuture<TieGuard.Decision> claim = ties.begin(IdempotencyFilter.view(req, new byte[0]));
    if (!claim.isDone() && waiting == Waiting.ASYNC && !asyncBroken && req.isAsyncSupported()) {
      CompletableFuture<AsyncWait.Step<Boolean>> step = claim.handle((d, error) -> d == TieGuard.Decision.LOST
          ? new AsyncWait.Answer<>(TieGuard.lostAnswer()) : new AsyncWait.Proceed<>(Boolean.TRUE));
      // a claim not answered in time runs the copy, as the blocking path does
      if (AsyncWait.start(req, res, attribute, step, WAIT_BOUND_MILLIS, new AsyncWait.Proceed<>(Boolean.TRUE),
          won -> { }, this::notResumed) != null) {
        return; // the container's thread goes back to its pool
      }
    }
    req.setAttribute(attribute, PASSED);
    TieGuard.Decision d;
    try {
      d = claim.get(WAIT_BOUND_MILLIS, TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new ServletException(e);
    } catch (ExecutionException | TimeoutException e) {
      d = TieGuard.Decision.EXECUTE;
    }
    if (d == TieGuard.Decision.LOST) {
      IdempotencyFilter.write(res, TieGuard.lostAnswer());
      return;
    }
    run(req, res, chain);
  }

  private static void run(HttpServletRequest req, HttpServletResponse res, FilterChain chain)
      throws IOException, ServletException {
    res.setHeader(TieGuard.WON_HEADER, "true"); // this copy runs: its answer decides the call
    chain.doFilter(req, res);
  }

  private void notResumed() {
    if (!asyncBroken) {
      asyncBroken = true;
      LOG.log(System.Logger.Level.ERROR, "TieFilter dispatched a request that did not come back through it: map it (and every "
          + "filter after it) for DispatcherType.ASYNC as well as REQUEST; waiting blocking from now on");
    }
  }
}
