package io.retrybudget.server;

import io.retrybudget.budget.RetryBudget;
import io.retrybudget.retry.AttemptTimeoutException;
import io.retrybudget.retry.RetryBudgetExhaustedException;
import io.retrybudget.retry.RetryExecutor;
import io.retrybudget.retry.RetryPolicy;
import io.retrybudget.retry.SuccessAwareBudget;
import io.retrybudget.retry.http.HttpRetryRules;
import io.retrybudget.retry.http.RetryingHttpClient;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Locale;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.function.Consumer;
import java.util.function.LongSupplier;

/**
 * Retry at the edge, suppress in the middle: a service that calls others marks itself a middle
 * layer by sending its downstream calls through this. An inbound first attempt calls downstream
 * with the full policy (retries within the budget); an inbound retry ({@code X-Retry-Attempt} > 1)
 * calls with one attempt, since a layer above is already retrying. When the downstream call was
 * refused by the budget, failed after this layer's attempts, or was told not to retry, the answer
 * upstream says "do not retry" ({@link Downstream#suppressedAnswer()}), so the layers above do not
 * multiply the attempts: A → B → C with three attempts each is 27 calls at C; this makes it about
 * one plus the budget's ratio.
 *
 * <p>Deadlines are propagated: an inbound {@code X-Request-Deadline-Ms} (how long the caller still
 * waits, {@link #inbound(RequestView)}) bounds this layer's downstream call — its whole call, its
 * retries included — to that time less {@link Builder#deadlineMargin} (for the way back up), as
 * well as by the policy's own deadline; no downstream attempt starts that the time left cannot
 * hold, every attempt tells the layer below what is left, and an inbound request whose deadline is
 * already spent calls nothing ({@link Downstream.Reason#DEADLINE_EXCEEDED}). So a layer never
 * retries for a caller who has stopped waiting, and its do-not-retry arrives while the caller
 * still listens.
 *
 * <p>Inbound retry headers are consumed here, never forwarded: the SDK's client numbers its own
 * attempts, and {@link #forwardable(String)} says which inbound headers may be copied downstream.
 * Uses the SDK's public {@link RetryingHttpClient} only.
 */
public final class MiddleLayer implements AutoCloseable {
  /** Headers between layers that belong to one hop and are never copied downstream. */
  public static final Set<String> CONSUMED_HEADERS = Set.of(
      "x-retry-attempt", "x-retry-pushback-ms", "x-request-deadline-ms", "retry-after", "idempotency-key",
      "idempotent-replayed",
      // hop-by-hop (RFC 9110 7.6.1) and what the client sets itself
      "connection", "keep-alive", "te", "trailer", "transfer-encoding", "upgrade", "proxy-connection",
      "host", "content-length", "expect");

  /** How many {@code X-Request-Deadline-Ms} values {@link #inbound} looks at, at most. */
  public static final int MAX_DEADLINE_VALUES = 8;

  private final RetryingHttpClient retrying;
  private final RetryingHttpClient single;
  private final ServerKitListener listener;
  private final long marginNanos;
  private final long maxDeadlineMillis;
  private final LongSupplier nanoClock;

  /**
   * What a middle layer needs to know of an inbound request: its attempt number
   * ({@code X-Retry-Attempt}, 1 when absent or unreadable) and how long its caller still waits
   * ({@code X-Request-Deadline-Ms}, -1 when absent or unreadable), read when it arrived
   * ({@code receivedNanos}, on the layer's clock).
   */
  public record Inbound(int attempt, long deadlineMillis, long receivedNanos) {
    /** Whether the caller gave a deadline. */
    public boolean hasDeadline() {
      return deadlineMillis >= 0;
    }
  }

  private MiddleLayer(Builder b) {
    this.listener = b.listener;
    this.marginNanos = b.deadlineMargin.toNanos();
    this.maxDeadlineMillis = b.maxInboundDeadline.toMillis();
    this.nanoClock = b.nanoClock;
    this.retrying = client(b, b.policy);
    this.single = client(b, b.policy.toBuilder().maxAttempts(1).build());
  }

  private static RetryingHttpClient client(Builder b, RetryPolicy policy) {
    RetryingHttpClient.Builder c = RetryingHttpClient.builder(b.http).policy(policy);
    if (b.budget != null) {
      c.budget(b.budget);
      if (b.budget instanceof SuccessAwareBudget aware) {
        c.listener(aware.listener()); // its throttle learns from how this layer's attempts end
      }
    }
    if (b.executor != null) {
      c.executor(b.executor);
    }
    return c.build();
  }

  public static Builder builder(HttpClient http) {
    return new Builder(http);
  }

  /** Whether an inbound header may be copied onto a downstream request. */
  public static boolean forwardable(String headerName) {
    return !CONSUMED_HEADERS.contains(headerName.toLowerCase(Locale.ROOT));
  }

  /** The inbound attempt number, from {@code X-Retry-Attempt} (1 when absent or unreadable). */
  public static int inboundAttempt(RequestView inbound) {
    return RetryAwareAdmission.attemptOf(inbound.header(HttpRetryRules.RETRY_ATTEMPT_HEADER));
  }

  /**
   * Reads an inbound request's {@code X-Retry-Attempt} and {@code X-Request-Deadline-Ms} and notes
   * when it arrived. Call it when the request arrives. The deadline is hostile input: each value is
   * read by {@link HttpRetryRules#parseDeadlineMillis} (digits only, capped at
   * {@link Builder#maxInboundDeadline}; garbage, fractions and negatives are no value), and when
   * the request carries several — more than one field line (a proxy appended its own), or one line
   * with a comma list (the same thing once an intermediary combined the lines, RFC 9110 5.3) — the
   * tightest valid one is taken, among the last {@link #MAX_DEADLINE_VALUES} values (the ones
   * intermediaries appended, so a sender's padding cannot push a proxy's value out); no valid value
   * is no deadline.
   */
  public Inbound inbound(RequestView request) {
    return new Inbound(inboundAttempt(request), inboundDeadlineMillis(request, maxDeadlineMillis), nanoClock.getAsLong());
  }

  /**
   * The tightest valid {@code X-Request-Deadline-Ms} of a request (see {@link #inbound}), capped at
   * {@code capMillis}; -1 when it has none.
   */
  static long inboundDeadlineMillis(RequestView request, long capMillis) {
    long tightest = -1;
    int seen = 0;
    java.util.List<String> lines = request.headers(HttpRetryRules.DEADLINE_HEADER, MAX_DEADLINE_VALUES);
    // from the last value back: what intermediaries appended comes last
    for (int i = lines.size() - 1; i >= 0 && seen < MAX_DEADLINE_VALUES; i--) {
      String line = lines.get(i);
      int to = line.length();
      while (to >= 0 && seen < MAX_DEADLINE_VALUES) {
        int comma = line.lastIndexOf(',', to - 1);
        String element = line.substring(comma + 1, to);
        to = comma;
        if (element.isBlank()) {
          continue; // an empty list element (RFC 9110 5.6.1) is no value
        }
        seen++;
        long ms = HttpRetryRules.parseDeadlineMillis(element, capMillis);
        if (ms >= 0 && (tightest < 0 || ms < tightest)) {
          tightest = ms;
        }
      }
    }
    return tightest;
  }

  /**
   * The time the inbound request leaves its downstream call: its deadline less the time since it
   * arrived and the margin; {@code null} when it gave none; zero or negative when spent.
   */
  public Duration timeLeft(Inbound inbound) {
    if (!inbound.hasDeadline()) {
      return null;
    }
    long elapsed = nanoClock.getAsLong() - inbound.receivedNanos();
    return Duration.ofMillis(inbound.deadlineMillis()).minusNanos(elapsed).minusNanos(marginNanos);
  }

  /**
   * Calls downstream for an inbound request with attempt number {@code inboundAttempt}, without a
   * deadline from the caller. Never fails: a failure is a {@link Downstream} that says to suppress.
   */
  public <T> CompletableFuture<Downstream<T>> send(int inboundAttempt, HttpRequest request, HttpResponse.BodyHandler<T> handler) {
    return send(inboundAttempt, null, request, handler);
  }

  /**
   * Calls downstream for {@code inbound} ({@link #inbound(RequestView)}): one attempt when it is a
   * retry, the whole call bounded by what its deadline leaves ({@link #timeLeft}); a spent deadline
   * sends nothing and answers {@link Downstream.Reason#DEADLINE_EXCEEDED}. Never fails.
   */
  public <T> CompletableFuture<Downstream<T>> send(Inbound inbound, HttpRequest request, HttpResponse.BodyHandler<T> handler) {
    Duration left = timeLeft(inbound);
    if (left != null && (left.isNegative() || left.isZero())) {
      return CompletableFuture.completedFuture(emit(new Downstream<>(null,
          new AttemptTimeoutException(Duration.ofMillis(inbound.deadlineMillis())), Downstream.Reason.DEADLINE_EXCEEDED)));
    }
    return send(inbound.attempt(), left, request, handler);
  }

  private <T> CompletableFuture<Downstream<T>> send(int inboundAttempt, Duration deadline, HttpRequest request,
      HttpResponse.BodyHandler<T> handler) {
    RetryingHttpClient client = inboundAttempt > 1 ? single : retrying;
    CompletableFuture<HttpResponse<T>> call;
    try {
      call = client.sendAsync(request, handler, deadline);
    } catch (RuntimeException e) {
      return CompletableFuture.completedFuture(emit(new Downstream<>(null, e, Downstream.Reason.FAILED_AFTER_RETRIES)));
    }
    return call.handle((response, error) -> emit(classify(response, error)));
  }

  private <T> Downstream<T> emit(Downstream<T> d) {
    if (d.suppress() && listener != ServerKitListener.NONE) {
      ServerKitListener.safely(() -> listener.onSuppression(d.reason()));
    }
    return d;
  }

  static <T> Downstream<T> classify(HttpResponse<T> response, Throwable error) {
    if (error != null) {
      Throwable cause = error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
      if (cause instanceof RetryBudgetExhaustedException budget) {
        @SuppressWarnings("unchecked")
        HttpResponse<T> last = budget.lastResult() instanceof HttpResponse<?> r ? (HttpResponse<T>) r : null;
        return new Downstream<>(last, cause, Downstream.Reason.BUDGET_EXHAUSTED);
      }
      return new Downstream<>(null, cause, Downstream.Reason.FAILED_AFTER_RETRIES);
    }
    if (HttpRetryRules.isRetryableStatus(response.statusCode())) {
      String pushback = response.headers().firstValue(HttpRetryRules.PUSHBACK_HEADER).orElse("").strip();
      boolean stop = pushback.startsWith("-");
      return new Downstream<>(response, null, stop ? Downstream.Reason.DOWNSTREAM_SAID_STOP : Downstream.Reason.FAILED_AFTER_RETRIES);
    }
    return new Downstream<>(response, null, Downstream.Reason.ANSWERED);
  }

  @Override
  public void close() {
    retrying.close();
    single.close();
  }

  public static final class Builder {
    private final HttpClient http;
    private RetryPolicy policy = RetryPolicy.builder().build();
    private RetryBudget budget;
    private Consumer<RetryExecutor.Builder> executor;
    private ServerKitListener listener = ServerKitListener.NONE;
    private Duration deadlineMargin = Duration.ofMillis(10);
    private Duration maxInboundDeadline = Duration.ofMillis(HttpRetryRules.MAX_DEADLINE_MILLIS);
    private LongSupplier nanoClock = System::nanoTime;

    private Builder(HttpClient http) {
      this.http = Objects.requireNonNull(http, "http must not be null");
    }

    /** The policy for inbound first attempts; inbound retries get the same with one attempt. */
    public Builder policy(RetryPolicy policy) {
      this.policy = Objects.requireNonNull(policy, "policy must not be null");
      return this;
    }

    /**
     * The budget of the dependency this layer calls (recommended: a fleet-wide Redis budget, behind
     * a {@link SuccessAwareBudget} so that retries stop in an outage but flow through random
     * failures; its listener is attached to this layer's clients here).
     */
    public Builder budget(RetryBudget budget) {
      this.budget = Objects.requireNonNull(budget, "budget must not be null");
      return this;
    }

    /** A listener for metrics: suppressions by reason ({@code MicrometerServerKitMetrics}). */
    public Builder listener(ServerKitListener listener) {
      this.listener = Objects.requireNonNull(listener, "listener must not be null");
      return this;
    }

    /**
     * What is taken off an inbound deadline for the answer's way back up (the hop, this layer's
     * own work): the downstream call must end that much before the caller stops waiting, so its
     * do-not-retry still reaches it. Default 10 ms; zero or more, under a minute.
     */
    public Builder deadlineMargin(Duration margin) {
      if (margin == null || margin.isNegative() || margin.compareTo(Duration.ofMinutes(1)) >= 0) {
        throw new IllegalArgumentException("deadlineMargin must be >= 0 and < 1 min, was " + margin);
      }
      this.deadlineMargin = margin;
      return this;
    }

    /**
     * The longest inbound {@code X-Request-Deadline-Ms} believed (a larger one is cut to it; the
     * policy's own deadline, when shorter, binds anyway). Default 1 h; 1 ms to 1 h.
     */
    public Builder maxInboundDeadline(Duration max) {
      if (max == null || max.toMillis() < 1 || max.toMillis() > HttpRetryRules.MAX_DEADLINE_MILLIS) {
        throw new IllegalArgumentException("maxInboundDeadline must be 1 ms to 1 h, was " + max);
      }
      this.maxInboundDeadline = max;
      return this;
    }

    /** The clock that inbound arrival and the time left are read on (tests); default System::nanoTime. */
    public Builder nanoClock(LongSupplier clock) {
      this.nanoClock = Objects.requireNonNull(clock, "nanoClock must not be null");
      return this;
    }

    /** Adjusts the SDK's executors (scheduler, clock) underneath. */
    public Builder executor(Consumer<RetryExecutor.Builder> customizer) {
      this.executor = Objects.requireNonNull(customizer, "executor must not be null");
      return this;
    }

    public MiddleLayer build() {
      return new MiddleLayer(this);
    }
  }
}
