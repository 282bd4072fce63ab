package io.retrybudget.server.servlet;

import io.retrybudget.server.IdempotencyGuard;
import io.retrybudget.server.Problems;
import io.retrybudget.server.RequestView;
import io.retrybudget.server.StoredResponse;
import jakarta.servlet.DispatcherType;
import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The Idempotency-Key store as a Jakarta Servlet 6.1 filter, for synchronous servlets (map it on
 * the routes that take keys). A method outside {@code methods()} (or a request without a key where
 * none is required) passes through untouched, its body unread. Otherwise it reads the request body (at most {@code maxRequestBodyBytes}, else
 * 413) so the fingerprint covers it and the servlet can still read it — as a stream, a reader, or
 * form parameters ({@code getParameter*} of an {@code application/x-www-form-urlencoded} POST,
 * decoded from the cached bytes as the container would); a {@code multipart/form-data} body is
 * parsed by the container itself ({@code getParts()}, under the servlet's multipart configuration),
 * so the servlet reads its parts and fields as usual — asks the guard, and either
 * answers at once (replay, 400, 409, 422, 503) or runs the chain with the response captured, stores
 * the answer and then sends it. The route template is the servlet mapping's pattern
 * ({@code /payments/*}). A request the servlet puts into async mode is not supported. With
 * {@link Waiting#ASYNC} the claim, and the write of the answer, are waited for off the container's
 * thread (see {@link Waiting}). A request is
 * guarded once: a later dispatch of it (the servlet's own, an error page) passes untouched.
 */
public final class IdempotencyFilter implements Filter {
  private static final System.Logger LOG = System.getLogger(IdempotencyFilter.class.getName());
  private static final Object PASSED = new Object();

  private final IdempotencyGuard guard;
  private final int maxRequestBodyBytes;
  private final long waitBoundNanos;
  private final Waiting waiting;
  private final String attribute = IdempotencyFilter.class.getName() + "@" + Integer.toHexString(System.identityHashCode(this));
  private volatile boolean asyncBroken;

  /**
   * The body as fingerprinted: the bytes read, or the canonical encoding of the parts when the
   * container parsed them itself (multipart: the request then passes to the servlet unwrapped).
   */
  private record Body(byte[] bytes, boolean containerParsed) {
    HttpServletRequest forChain(HttpServletRequest req) {
      return containerParsed ? req : new CachedBodyRequest(req, bytes);
    }
  }

  /** A claim made for a request dispatched again to run the chain: its execution and its body. */
  private record Claimed(IdempotencyGuard.Execution execution, Body body) {}

  /** Waits for Redis {@link Waiting#BLOCKING}. */
  public IdempotencyFilter(IdempotencyGuard guard, int maxRequestBodyBytes) {
    this(guard, maxRequestBodyBytes, Waiting.BLOCKING);
  }

  /**
   * With {@link Waiting#ASYNC} the key's claim (and a bounded wait for an in-progress duplicate)
   * does not hold the container's thread: map this filter and those after it for {@code REQUEST}
   * and {@code ASYNC}.
   */
  public IdempotencyFilter(IdempotencyGuard guard, int maxRequestBodyBytes, Waiting waiting) {
    this.guard = Objects.requireNonNull(guard, "guard must not be null");
    if (maxRequestBodyBytes < 0) {
      throw new IllegalArgumentException("maxRequestBodyBytes must be >= 0, was " + maxRequestBodyBytes);
    }
    this.maxRequestBodyBytes = maxRequestBodyBytes;
    this.waiting = Objects.requireNonNull(waiting, "waiting must not be null");
    // the guard's futures end by themselves (store timeout, bounded wait); this is a second fence
    this.waitBoundNanos = guard.config().waitForInProgress().plus(Duration.ofSeconds(10)).toNanos();
  }

  @Override
  public void doFilter(ServletRequest request, ServletResponse response, FilterChain chain)
      throws IOException, ServletException {
    if (!(request instanceof HttpServletRequest req) || !(response instanceof HttpServletResponse res)) {
      chain.doFilter(request, response);
      return;
    }
    Object mark = req.getAttribute(attribute);
    if (mark instanceof AsyncWait<?> wait && req.getDispatcherType() == DispatcherType.ASYNC
        && wait.resume() instanceof Claimed claimed) {
      execute(req, claimed.body().forChain(req), res, chain, claimed.execution()); // the claim's dispatch
      return;
    }
    if (mark != null) {
      chain.doFilter(request, response); // guarded on an earlier pass of this request
      return;
    }
    if (!guard.config().methods().contains(req.getMethod().toUpperCase(java.util.Locale.ROOT))
        || (req.getHeader(guard.config().keyHeader()) == null && !guard.config().required())) {
      chain.doFilter(request, response); // not guarded: untouched, its body is not read
      return;
    }
    Body body = readBody(req, res);
    if (body == null) {
      return; // answered 413 or 400
    }
    HttpServletRequest cached = body.forChain(req);
    CompletableFuture<IdempotencyGuard.Begin> begun;
    try {
      RequestView view = view(cached, body.bytes());
      begun = guard.begin(body.containerParsed() ? MultipartBody.withoutBoundary(view) : view);
    } catch (RuntimeException e) {
      begun = CompletableFuture.failedFuture(e);
    }
    if (!begun.isDone() && waiting == Waiting.ASYNC && !asyncBroken && req.isAsyncSupported()) {
      CompletableFuture<AsyncWait.Step<Claimed>> step = begun.handle((b, error) -> {
        if (error != null) {
          return new AsyncWait.Answer<>(unavailable());
        }
        return b instanceof IdempotencyGuard.Answer a ? new AsyncWait.Answer<>(a.response())
            : new AsyncWait.Proceed<>(new Claimed(((IdempotencyGuard.Execute) b).execution(), body));
      });
      // no decision in time: 503, as the blocking path; a claim made after it, or never run, is released
      if (AsyncWait.start(req, res, attribute, step, TimeUnit.NANOSECONDS.toMillis(waitBoundNanos),
          new AsyncWait.Answer<>(unavailable()), c -> guard.abandon(c.execution()), this::notResumed) != null) {
        return; // the container's thread goes back to its pool
      }
    }
    req.setAttribute(attribute, PASSED);
    IdempotencyGuard.Begin begin;
    try {
      begin = await(begun);
    } catch (RuntimeException e) {
      write(res, unavailable());
      return;
    }
    if (begin instanceof IdempotencyGuard.Answer a) {
      write(res, a.response());
      return;
    }
    execute(req, cached, res, chain, ((IdempotencyGuard.Execute) begin).execution());
  }

  /**
   * Reads the body to fingerprint (multipart: the container parses the parts), or answers 413
   * (over {@code maxRequestBodyBytes}) or 400 (a multipart body the container refused) and
   * returns null.
   */
  private Body readBody(HttpServletRequest req, HttpServletResponse res) throws IOException {
    byte[] bytes = null;
    boolean containerParsed = false;
    MultipartBody.Result parts = MultipartBody.isMultipart(req.getContentType())
        ? MultipartBody.read(req, maxRequestBodyBytes) : new MultipartBody.ReadRaw();
    if (parts instanceof MultipartBody.Refused refused) {
      write(res, Problems.of(refused.status(), "request-body-unreadable", "Request body refused", refused.detail()));
      return null;
    } else if (parts instanceof MultipartBody.Parsed parsed) {
      bytes = parsed.canonical();
      containerParsed = true;
    } else if (parts instanceof MultipartBody.ReadRaw) {
      bytes = readBounded(req.getInputStream(), maxRequestBodyBytes);
    }
    if (bytes == null) {
      write(res, Problems.of(413, "request-too-large", "Request body too large",
          "the body exceeds " + maxRequestBodyBytes + " bytes"));
      return null;
    }
    return new Body(bytes, containerParsed);
  }

  private StoredResponse unavailable() {
    return Problems.withPushback(Problems.of(503, "idempotency-store-unavailable", "Idempotency store unavailable",
        "retry later with the same key"), guard.config().unavailableRetryAfter());
  }

  /**
   * Runs the chain under the claim, the answer captured, stores it and sends it. With
   * {@link Waiting#ASYNC} the store's write is waited for off the thread too: the captured answer
   * goes out (on a container thread) once Redis has it, or at the wait's bound (the claim then
   * lapses with its lease, as when the write fails).
   */
  private void execute(HttpServletRequest req, HttpServletRequest cached, HttpServletResponse res, FilterChain chain,
      IdempotencyGuard.Execution execution) throws IOException, ServletException {
    CapturingResponse captured = new CapturingResponse(res, guard.config().maxStoredBodyBytes());
    cached.setAttribute(io.retrybudget.server.IdempotencyContext.ATTRIBUTE, execution.context());
    try {
      chain.doFilter(cached, captured);
      captured.flushWriter();
    } catch (IOException | ServletException | RuntimeException | Error e) {
      StoredResponse stored = awaitOrNull(guard.failed(execution, e)); // stored (STORE_ALL) or released
      if (stored == null || res.isCommitted()) {
        throw e;
      }
      res.reset();
      write(res, stored); // the answer its retries replay
      return;
    }
    CompletableFuture<Void> stored = guard.finish(execution, captured.answer());
    if (!stored.isDone() && waiting == Waiting.ASYNC && req.isAsyncSupported() && !req.isAsyncStarted()) {
      AsyncWait.Answer<Void> send = new AsyncWait.Answer<>(r -> captured.commit());
      if (AsyncWait.start(req, res, attribute, stored.handle((ok, error) -> send), TimeUnit.NANOSECONDS.toMillis(waitBoundNanos),
          send, nothing -> { }, () -> { }) != null) {
        return; // the container's thread goes back to its pool while Redis stores the answer
      }
    }
    awaitQuietly(stored);
    captured.commit();
  }

  private void notResumed() {
    if (!asyncBroken) {
      asyncBroken = true;
      LOG.log(System.Logger.Level.ERROR, "IdempotencyFilter dispatched a request that did not come back through it (its claim "
          + "was released): map it (and every filter after it) for DispatcherType.ASYNC as well as REQUEST; "
          + "waiting blocking from now on");
    }
  }

  private <T> T await(CompletableFuture<T> future) {
    try {
      return future.get(waitBoundNanos, TimeUnit.NANOSECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    } catch (ExecutionException | TimeoutException e) {
      throw new IllegalStateException(e);
    }
  }

  private <T> T awaitOrNull(CompletableFuture<T> future) {
    try {
      return await(future);
    } catch (RuntimeException e) {
      return null;
    }
  }

  private void awaitQuietly(CompletableFuture<Void> future) {
    try {
      await(future);
    } catch (RuntimeException ignored) {
      // the answer goes out anyway; the claim lapses with its lease
    }
  }

  /** Writes a whole answer to a response that has not been committed. */
  public static void write(HttpServletResponse res, StoredResponse answer) throws IOException {
    res.setStatus(answer.status());
    for (StoredResponse.Header h : answer.headers()) {
      res.addHeader(h.name(), h.value());
    }
    byte[] b = answer.body();
    res.setContentLength(b.length);
    res.getOutputStream().write(b);
  }

  /** The body, or null when it is longer than {@code max}. */
  static byte[] readBounded(InputStream in, int max) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    byte[] buf = new byte[8192];
    int n;
    while ((n = in.read(buf)) >= 0) {
      if (out.size() + n > max) {
        return null;
      }
      out.write(buf, 0, n);
    }
    return out.toByteArray();
  }

  /**
   * The kit's view of a servlet request ({@link io.retrybudget.server.MiddleLayer#inbound}, the
   * guards), with {@code body} as its body (an empty array for none; the view does not read it).
   */
  public static RequestView view(HttpServletRequest req, byte[] body) {
    return new RequestView() {
      @Override
      public String method() {
        return req.getMethod();
      }

      @Override
      public String route() {
        var mapping = req.getHttpServletMapping();
        return mapping != null && mapping.getPattern() != null ? mapping.getPattern() : req.getServletPath();
      }

      @Override
      public String target() {
        String q = req.getQueryString();
        return q == null ? req.getRequestURI() : req.getRequestURI() + "?" + q;
      }

      @Override
      public String header(String name) {
        return req.getHeader(name);
      }

      @Override
      public List<String> headers(String name, int max) {
        if (max < 1) {
          throw new IllegalArgumentException("max must be >= 1, was " + max);
        }
        // the last max lines (the container's header size limit bounds how many there are)
        var lines = req.getHeaders(name);
        java.util.ArrayDeque<String> last = new java.util.ArrayDeque<>(Math.min(max, 8));
        while (lines != null && lines.hasMoreElements()) {
          if (last.size() == max) {
            last.removeFirst();
          }
          last.addLast(lines.nextElement());
        }
        return new ArrayList<>(last);
      }

      @Override
      public int headerLines(String name) {
        var lines = req.getHeaders(name);
        int n = 0;
        while (lines != null && lines.hasMoreElements()) {
          lines.nextElement();
          n++;
        }
        return n;
      }

      @Override
      public String principal() {
        java.security.Principal p = req.getUserPrincipal();
        return p == null ? null : p.getName();
      }

      @Override
      public byte[] body() {
        return body;
      }
    };
  }
}
