package io.retrybudget.server.servlet;

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
 * It never waits for anything. A request that goes async behind it (a {@link Waiting#ASYNC}
 * filter waiting for Redis, an async servlet) keeps its permit until the request completes; a
 * later dispatch of the request (map this filter for {@code ASYNC} too when filters after it wait
 * async) passes untouched, on the permit it already holds.
 */
public final class AdmissionFilter implements Filter {
  private final RetryAwareAdmission admission;
  private final String attribute = AdmissionFilter.class.getName() + "@" + Integer.toHexString(System.identityHashCode(this));

  public AdmissionFilter(RetryAwareAdmission admission) {
    this.admission = Objects.requireNonNull(admission, "admission must not be null");
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
    Optional<RetryAwareAdmission.Permit> permit = admission.tryAcquire(attempt);
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
