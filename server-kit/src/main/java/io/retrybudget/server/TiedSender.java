package io.retrybudget.server;

import io.retrybudget.budget.BudgetDecision;
import io.retrybudget.budget.RetryBudget;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;

/**
 * The client side of tied requests: sends a call to one replica and, {@code delay} later (default
 * 1 ms), an identical copy to the next, both tagged with one {@code X-Tie-Id}; the replicas'
 * {@link TieGuard}s let only one execute. Only a copy that passed its replica's tie guard (its
 * answer carries {@code X-Tie-Won: true}, set by {@code TieFilter}/{@code VertxTies} on the copy
 * that won the tie or ran because Redis could not be asked) decides the call at once. Any other
 * answer (a lost tie, a shed 503, a 429, an idempotency 409 from a guard placed before the tie
 * guard, a connection refused) never decides while the other copy is still out: when both are in
 * and neither won, the call gets the best of them (an answer that is no refusal over a 409, 429 or
 * 503, over a lost tie or a failure; the first copy's on equal terms). The second copy draws on
 * the budget like a hedge: when the budget refuses, it is not sent. Copies carry
 * {@code X-Retry-Attempt} 1 and 2, so an overloaded replica sheds the copy first. The copy that is
 * not the call's answer has its body closed when closeable ({@code ofInputStream}, {@code ofLines}).
 */
public final class TiedSender {
  private final HttpClient http;
  private final List<URI> replicas;
  private final long delayNanos;
  private final RetryBudget budget;
  private final LongAdder tiesSent = new LongAdder();
  private final LongAdder copiesDenied = new LongAdder();

  private TiedSender(Builder b) {
    this.http = b.http;
    this.replicas = b.replicas;
    this.delayNanos = b.delay.toNanos();
    this.budget = b.budget;
  }

  public static Builder builder(HttpClient http) {
    return new Builder(http);
  }

  /** Second copies sent, and second copies the budget refused (monotonic). */
  public long[] stats() {
    return new long[] {tiesSent.sum(), copiesDenied.sum()};
  }

  public <T> CompletableFuture<HttpResponse<T>> send(HttpRequest request, HttpResponse.BodyHandler<T> handler) {
    String tie = UUID.randomUUID().toString();
    int first = ThreadLocalRandom.current().nextInt(replicas.size());
    CompletableFuture<HttpResponse<T>> result = new CompletableFuture<>();
    Call<T> call = new Call<>(result);
    if (budget != null) {
      budget.recordFirstAttempt();
    }
    CompletableFuture<HttpResponse<T>> one = copy(request, handler, tie, first, 1);
    one.whenComplete((r, e) -> call.arrived(1, r, e));
    Executor later = CompletableFuture.delayedExecutor(delayNanos, TimeUnit.NANOSECONDS);
    CompletableFuture.runAsync(() -> {
      if (result.isDone()) {
        call.arrived(2, null, null); // the winner answered within the delay: no second copy
        return;
      }
      CompletionStage<BudgetDecision> permit = budget == null
          ? CompletableFuture.completedFuture(BudgetDecision.GRANTED) : budget.acquire();
      permit.whenComplete((d, error) -> {
        if (error != null || !d.granted() || result.isDone()) {
          if (error != null || !d.granted()) {
            copiesDenied.increment();
          }
          call.arrived(2, null, null);
          return;
        }
        tiesSent.increment();
        copy(request, handler, tie, first + 1, 2).whenComplete((r, e) -> call.arrived(2, r, e));
      });
    }, later);
    // The other copy is not cancelled: it stops before working at its replica and answers at
    // once, and cancelling an HTTP/1.1 exchange of java.net.http closes its connection (measured:
    // with cancellation about 1 call in 400 lost the winner's answer on a closed connection).
    return result;
  }

  private <T> CompletableFuture<HttpResponse<T>> copy(HttpRequest request, HttpResponse.BodyHandler<T> handler,
      String tie, int replica, int attempt) {
    HttpRequest.Builder b = HttpRequest.newBuilder(request, (name, value) ->
        !name.equalsIgnoreCase(TieGuard.TIE_HEADER) && !name.equalsIgnoreCase(RetryAwareAdmission.ATTEMPT_HEADER));
    b.uri(onReplica(request.uri(), replicas.get(replica % replicas.size())));
    b.header(TieGuard.TIE_HEADER, tie).header(RetryAwareAdmission.ATTEMPT_HEADER, Integer.toString(attempt));
    try {
      return http.sendAsync(b.build(), handler);
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /** The two copies of one call: which may decide it, and the fallback when none may. */
  private static final class Call<T> {
    private final CompletableFuture<HttpResponse<T>> result;
    private int outstanding = 2;
    private HttpResponse<T> best;
    private int bestRank = Integer.MAX_VALUE;
    private Throwable failure;
    private final List<HttpResponse<T>> received = new java.util.ArrayList<>(2);
    private boolean ended;

    Call(CompletableFuture<HttpResponse<T>> result) {
      this.result = result;
    }

    /**
     * Copy {@code n} answered (or will never be sent: {@code r} and {@code e} null). The body of a
     * copy that is not the call's answer is closed when closeable ({@code ofInputStream},
     * {@code ofLines}), freeing its connection: before the call completes for a copy that came
     * first, as it arrives for one that comes after.
     */
    void arrived(int n, HttpResponse<T> r, Throwable e) {
      HttpResponse<T> decide = null;
      Throwable fail = null;
      List<HttpResponse<T>> discarded = List.of();
      synchronized (this) {
        outstanding--;
        if (ended) {
          discarded = r == null ? List.of() : List.of(r); // the call was decided without it
        } else {
          if (r != null) {
            received.add(r);
          }
          if (r != null && won(r)) {
            decide = r;
          } else {
            int rank = rank(r);
            if (r != null && rank < bestRank) { // on equal terms the first copy (it arrives or is ranked first)
              best = r;
              bestRank = rank;
            }
            if (e != null && !(e instanceof java.util.concurrent.CancellationException) && failure == null) {
              failure = e;
            }
            if (outstanding == 0) {
              if (best != null && bestRank < 3) {
                decide = best;
              } else {
                // the winner failed, or its answer was lost on the way (a copy that lost the tie
                // never says how the work went): a failure the caller may retry
                fail = failure != null ? failure : new java.io.IOException("tied request: no copy brought the winner's answer");
              }
            }
          }
          if (decide != null || fail != null) {
            ended = true;
            HttpResponse<T> answer = decide;
            discarded = received.stream().filter(x -> x != answer).toList();
          }
        }
      }
      discarded.forEach(Call::closeBody);
      if (decide != null) {
        result.complete(decide);
      } else if (fail != null) {
        result.completeExceptionally(fail);
      }
      // else: this copy may not decide and the other is still out: wait for it
    }

    private static void closeBody(HttpResponse<?> response) {
      if (response.body() instanceof AutoCloseable body) {
        try {
          body.close();
        } catch (Exception ignored) {
          // nothing more to give back
        }
      }
    }

    private static boolean won(HttpResponse<?> r) {
      return r.headers().firstValue(TieGuard.WON_HEADER).map("true"::equalsIgnoreCase).orElse(false);
    }

    /** 1: an answer that is no refusal; 2: 409, 429 or 503; 3: a lost tie. */
    private static int rank(HttpResponse<?> r) {
      if (r == null || r.headers().firstValue(TieGuard.LOST_HEADER).isPresent()) {
        return 3;
      }
      int s = r.statusCode();
      return s == 409 || s == 429 || s == 503 ? 2 : 1;
    }
  }

  static URI onReplica(URI uri, URI replica) {
    try {
      return new URI(replica.getScheme(), replica.getRawAuthority() == null ? null : replica.getAuthority(),
          uri.getPath(), uri.getQuery(), uri.getFragment());
    } catch (URISyntaxException e) {
      throw new IllegalArgumentException("cannot move " + uri + " to replica " + replica, e);
    }
  }

  public static final class Builder {
    private final HttpClient http;
    private List<URI> replicas;
    private Duration delay = Duration.ofMillis(1);
    private RetryBudget budget;

    private Builder(HttpClient http) {
      this.http = Objects.requireNonNull(http, "http must not be null");
    }

    /** At least two replicas ({@code scheme://host:port}); the copies go to two different ones. */
    public Builder replicas(List<URI> replicas) {
      if (replicas == null || replicas.size() < 2) {
        throw new IllegalArgumentException("replicas must name at least two replicas, was " + replicas);
      }
      for (URI r : replicas) {
        if (r.getScheme() == null || r.getHost() == null) {
          throw new IllegalArgumentException("replicas must be absolute scheme://host[:port] URIs, was " + r);
        }
      }
      this.replicas = List.copyOf(replicas);
      return this;
    }

    /** Between the two copies (default 1 ms). */
    public Builder delay(Duration delay) {
      if (delay == null || delay.isNegative() || delay.compareTo(Duration.ofSeconds(10)) > 0) {
        throw new IllegalArgumentException("delay must be in [0, 10 s], was " + delay);
      }
      this.delay = delay;
      return this;
    }

    /** The dependency's budget: each call counts a first attempt, each second copy asks a permit. */
    public Builder budget(RetryBudget budget) {
      this.budget = Objects.requireNonNull(budget, "budget must not be null");
      return this;
    }

    public TiedSender build() {
      if (replicas == null) {
        throw new IllegalArgumentException("replicas must be set");
      }
      return new TiedSender(this);
    }
  }
}
