package io.retrybudget.server.servlet;

import io.retrybudget.server.AdmissionQueue;
import io.retrybudget.server.KeyLookup;
import io.retrybudget.server.Problems;
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
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * {@link AdmissionQueue} as a Servlet 6.1 filter (map it first): the chain runs once the request
 * holds a worker, and the worker is released when the request completes (an async request: when
 * its async cycle completes). A request whose deadline passes while it waits is answered 504
 * do-not-retry at once, one that waits too long or finds the queue full 503 with a spread pushback;
 * the chain never runs for either.
 *
 * <p><b>It waits on the container's thread, bounded in time.</b> The thread waits at most until the
 * request's {@link AdmissionQueue.Ticket#expiresAtNanos() expiry} — the moment the queue drops it
 * anyway: never later than its deadline, nor than the queue's timeout ({@code longTimeout}, 100 ms
 * by default; {@code shortTimeout}, 5 ms, while the queue is standing) — and then answers. Why not
 * Servlet async: the wait is short by construction, and a blocking wait works with synchronous
 * servlets and any filter mapping (no {@code ASYNC} dispatch that a filter mapped for
 * {@code REQUEST} only would skip). The price: a request that waits holds a container thread, so
 * give the container more threads than {@code workers} (workers + the requests you let wait); the
 * container's own queue in front of its pool is invisible to this filter and has no deadline.
 *
 * <p>A later dispatch of an admitted request (async, error page) passes untouched, on the worker it
 * already holds.
 */
public final class QueueAdmissionFilter implements Filter {
  /** The longest wait for a key lookup, whatever the lookup's own timeout (a second fence). */
  private static final long LOOKUP_FENCE_NANOS = TimeUnit.SECONDS.toNanos(10);

  private final AdmissionQueue queue;
  private final KeyLookup lookup;
  private final String attribute = QueueAdmissionFilter.class.getName() + "@" + Integer.toHexString(System.identityHashCode(this));

  public QueueAdmissionFilter(AdmissionQueue queue) {
    this(queue, null);
  }

  /**
   * With a {@link KeyLookup} (or null for none): a request with an idempotency key that would have
   * to wait is looked up first, on this thread (bounded by the lookup's timeout and the request's
   * deadline): a stored answer is a replay, which bypasses the queue and is never shed; a claimed
   * key makes the request a retry.
   */
  public QueueAdmissionFilter(AdmissionQueue queue, KeyLookup lookup) {
    this.queue = Objects.requireNonNull(queue, "queue must not be null");
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
    long received = queue.nanoTime();
    RequestView view = IdempotencyFilter.view(req, new byte[0]);
    int attempt = RetryAwareAdmission.attemptOf(req.getHeader(RetryAwareAdmission.ATTEMPT_HEADER));
    long deadline = queue.deadlineMillis(view);
    if (lookup != null && lookup.applies(view) && queue.saturated()) {
      KeyLookup.Seen seen = seen(view, deadline < 0 ? LOOKUP_FENCE_NANOS
          : Math.min(LOOKUP_FENCE_NANOS, received + deadline * 1_000_000L - queue.nanoTime()));
      if (seen == KeyLookup.Seen.STORED) {
        queue.replayAdmitted();
        req.setAttribute(attribute, Boolean.TRUE);
        chain.doFilter(request, response);
        return;
      }
      if (seen == KeyLookup.Seen.IN_PROGRESS) {
        attempt = Math.max(2, attempt);
      }
    }
    CompletableFuture<Object> decided = new CompletableFuture<>();
    AdmissionQueue.Ticket ticket = queue.submit(attempt, deadline, received, new AdmissionQueue.Waiter() {
      @Override
      public void start(AdmissionQueue.Permit permit) {
        decided.complete(permit);
      }

      @Override
      public void reject(AdmissionQueue.Rejection rejection) {
        decided.complete(rejection);
      }
    });
    Object outcome = await(ticket, decided);
    if (outcome instanceof AdmissionQueue.Rejection r) {
      IdempotencyFilter.write(res, r.answer());
      return;
    }
    if (!(outcome instanceof AdmissionQueue.Permit permit)) {
      // interrupted while waiting, taken out of the queue: the request never runs
      IdempotencyFilter.write(res, Problems.withPushback(Problems.of(503, "queue-timeout", "Queue timeout",
          "the request was not processed; retry after the pushback"), queue.config().pushback().min()));
      return;
    }
    Release release = new Release(permit);
    req.setAttribute(attribute, release);
    try {
      chain.doFilter(request, response);
    } catch (IOException | ServletException | RuntimeException | Error e) {
      release.run();
      throw e;
    }
    if (req.isAsyncStarted()) {
      try {
        req.getAsyncContext().addListener(release);
      } catch (IllegalStateException ended) {
        release.run();
      }
    } else {
      release.run();
    }
  }

  /**
   * The decision: waits until the ticket's expiry at most (when the queue drops it, if no worker
   * took it), then has the queue drop what has expired; null when interrupted and taken out.
   */
  private Object await(AdmissionQueue.Ticket ticket, CompletableFuture<Object> decided) {
    boolean interrupted = false;
    try {
      while (true) {
        long left = ticket.expiresAtNanos() - queue.nanoTime();
        try {
          if (decided.isDone()) {
            return decided.get();
          }
          if (left <= 0) {
            queue.expire(); // the ticket has expired: this decides it, if nothing else has
            left = TimeUnit.MILLISECONDS.toNanos(1);
          }
          return decided.get(left, TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
          // its expiry: loop, and expire it
        } catch (InterruptedException e) {
          interrupted = true;
          if (ticket.cancel()) {
            return null;
          }
          // decided already: the waiter is being told
        } catch (ExecutionException e) {
          throw new IllegalStateException(e.getCause());
        }
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  private KeyLookup.Seen seen(RequestView view, long boundNanos) {
    if (boundNanos <= 0) {
      return KeyLookup.Seen.NONE; // no time left: the queue answers 504
    }
    try {
      return lookup.lookup(view).get(boundNanos, TimeUnit.NANOSECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return KeyLookup.Seen.NONE;
    } catch (ExecutionException | TimeoutException e) {
      return KeyLookup.Seen.NONE;
    }
  }

  /** Releases the worker once, when the request completes or fails. */
  private static final class Release implements AsyncListener, Runnable {
    private final AdmissionQueue.Permit permit;
    private final AtomicBoolean released = new AtomicBoolean();

    Release(AdmissionQueue.Permit permit) {
      this.permit = permit;
    }

    @Override
    public void run() {
      if (released.compareAndSet(false, true)) {
        permit.release();
      }
    }

    @Override
    public void onComplete(AsyncEvent event) {
      run();
    }

    @Override
    public void onError(AsyncEvent event) {
      run();
    }

    @Override
    public void onTimeout(AsyncEvent event) {
      // whoever started async answers the timeout; the worker is released when the request completes
    }

    @Override
    public void onStartAsync(AsyncEvent event) {
      event.getAsyncContext().addListener(this);
    }
  }
}
