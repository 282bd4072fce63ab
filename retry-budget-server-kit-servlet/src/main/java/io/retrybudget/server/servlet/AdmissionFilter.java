package io.retrybudget.server.servlet;

import io.retrybudget.server.KeyLookup;
import io.retrybudget.server.RequestView;
import io.retrybudget.server.RetryAwareAdmission;
import jakarta.servlet.AsyncEvent;
import jakarta.servlet.AsyncListener;
import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * {@link RetryAwareAdmission} as a Servlet 6.1 filter (map it first): sheds with 503 and pushback,
 * or runs the chain and reports its outcome (2xx-4xx success, 5xx ignored, an exception dropped).
 * It waits for nothing, except, with a {@link KeyLookup}, for the store's answer about a keyed
 * request it would otherwise shed. A request that goes async behind it (a {@link Waiting#ASYNC}
 * filter waiting for Redis, an async servlet) keeps its permit until the request completes; a
 * later dispatch of the request (map this filter for {@code ASYNC} too when filters after it wait
 * async) passes untouched, on the permit it already holds.
 */
public final class AdmissionFilter implements Filter {
  private final RetryAwareAdmission admission;
  private final KeyLookup lookup;
  private final String attribute = AdmissionFilter.class.getName() + "@" + Integer.toHexString(System.identityHashCode(this));

  public AdmissionFilter(RetryAwareAdmission admission) {
    this(admission, null);
  }

  /**
   * With a {@link KeyLookup} (or null for none): a request with an idempotency key that would be
   * shed is looked up in the store first, on this thread (bounded by the lookup's timeout): a
   * stored answer is a replay and passes on to the {@link IdempotencyFilter}, a claimed key makes
   * the request a retry.
   */
  public AdmissionFilter(RetryAwareAdmission admission, KeyLookup lookup) {
    this.admission = Objects.requireNonNull(admission, "admission must not be null");
    this.lookup = lookup;
  }

  @Override
  public void doFilter(ServletRequest request, ServletResponse response, FilterChain chain)
      throws IOException, ServletException {
    if (!(request instanceof HttpServletRequest req) || !(response instanceof HttpServletResponse res)
        || req.getAttribute(attribute) != null) {
      chain.doFilter(request, response); // (or: admitted on an earlier pass of this request)
      return;
    }
    int attempt = RetryAwareAdmission.attemptOf(req.getHeader(RetryAwareAdmission.ATTEMPT_HEADER));
    RequestView view = lookup == null ? null : IdempotencyFilter.view(req, new byte[0]);
    boolean keyed = view != null && lookup.applies(view);
    Optional<RetryAwareAdmission.Permit> permit = keyed ? admission.tryAcquireBeforeLookup(attempt)
        : admission.tryAcquire(attempt);
    if (permit.isEmpty() && keyed) {
      permit = admission.tryAcquire(attempt, seen(view));
    }
    if (permit.isEmpty()) {
      IdempotencyFilter.write(res, admission.shedAnswer());
      return;
    }
    Release release = new Release(permit.get(), res);
    req.setAttribute(attribute, release);
    try {
      chain.doFilter(request, response);
    } catch (IOException | ServletException | RuntimeException | Error e) {
      release.dropped();
      throw e;
    }
    if (req.isAsyncStarted()) {
      // the answer comes later: released when it is complete (Jetty and Tomcat say "started" until
      // this dispatch returns, even when the async cycle was already dispatched or completed)
      try {
        req.getAsyncContext().addListener(release);
      } catch (IllegalStateException ended) {
        release.completed();
      }
    } else {
      release.completed();
    }
  }

  private KeyLookup.Seen seen(RequestView view) {
    try {
      // the lookup's own timeout ends it; the bound here is a second fence
      return lookup.lookup(view).get(10, java.util.concurrent.TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return KeyLookup.Seen.NONE;
    } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
      return KeyLookup.Seen.NONE;
    }
  }

  /** Ends a permit once: by the response's status when the request completes, dropped on an error. */
  private static final class Release implements AsyncListener {
    private final RetryAwareAdmission.Permit permit;
    private final HttpServletResponse response;
    private final AtomicBoolean released = new AtomicBoolean();

    Release(RetryAwareAdmission.Permit permit, HttpServletResponse response) {
      this.permit = permit;
      this.response = response;
    }

    void completed() {
      if (released.compareAndSet(false, true)) {
        if (response.getStatus() >= 500) {
          permit.onIgnore();
        } else {
          permit.onSuccess();
        }
      }
    }

    void dropped() {
      if (released.compareAndSet(false, true)) {
        permit.onDropped();
      }
    }

    @Override
    public void onComplete(AsyncEvent event) {
      completed();
    }

    @Override
    public void onError(AsyncEvent event) {
      dropped();
    }

    @Override
    public void onTimeout(AsyncEvent event) {
      // whoever started async answers the timeout; the permit ends when the request completes
    }

    @Override
    public void onStartAsync(AsyncEvent event) {
      event.getAsyncContext().addListener(this); // a further async cycle of the request: stay until it completes
    }
  }
}
