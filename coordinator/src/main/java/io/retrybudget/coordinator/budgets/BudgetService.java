package io.retrybudget.coordinator.budgets;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.BudgetNames;
import io.retrybudget.budget.redis.protocol.BrokenBudgetException;
import io.retrybudget.budget.redis.protocol.BudgetCall;
import io.retrybudget.budget.redis.protocol.BudgetKeys;
import io.retrybudget.budget.redis.protocol.BudgetReply;
import io.retrybudget.budget.redis.protocol.BudgetScripts;
import io.retrybudget.budget.redis.protocol.ConfigChange;
import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import io.retrybudget.budget.redis.protocol.StatusReply;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SortedSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The budget operations of the HTTP API, on the SDK's typed script protocol ({@link BudgetScripts}:
 * one implementation of the rule and of the scripts' arguments and replies). Every Redis call has a
 * short timeout and completes on the caller's Vert.x context; the event loop never waits for Redis.
 */
public final class BudgetService {
  static final BudgetConfig DEFAULTS = BudgetConfig.builder("defaults").build();
  static final long CLUSTER_NAMES_TIMEOUT_MILLIS = 5_000;
  /** Most status calls of listings on the Redis connection at once (its queue holds 4096). */
  static final int LISTING_CONCURRENCY = 32;
  /**
   * Least time between the starts of two listings: a flood of readers without a token then costs
   * Redis at most 4 listings a second (4,000 status calls with 1,000 budgets), and a reader waits at
   * most this long more for an answer still read after it asked.
   */
  public static final Duration LISTING_SPACING = Duration.ofMillis(250);

  private final BudgetScripts scripts;
  private final Vertx vertx;
  private final long timeoutMillis;
  private final boolean autoCreate;
  private final long listingSpacingNanos;
  /** Limit and whether with buckets -> its listings; the lock of their state. */
  private final Map<ListingKind, ListingState> listings = new HashMap<>();

  public BudgetService(RedisBudgetStore store, Vertx vertx, Duration timeout) {
    this(store, vertx, timeout, false);
  }

  /**
   * @param autoCreate true: a POST to a budget without configuration seeds the defaults (as before
   *     COORDINATOR_AUTO_CREATE existed); false: it is refused and nothing is written
   */
  public BudgetService(RedisBudgetStore store, Vertx vertx, Duration timeout, boolean autoCreate) {
    this(store, vertx, timeout, autoCreate, LISTING_SPACING);
  }

  public BudgetService(RedisBudgetStore store, Vertx vertx, Duration timeout, boolean autoCreate, Duration listingSpacing) {
    this.listingSpacingNanos = listingSpacing.toNanos();
    this.scripts = new BudgetScripts(store);
    this.vertx = vertx;
    this.timeoutMillis = timeout.toMillis();
    this.autoCreate = autoCreate;
  }

  /** The most a Redis command is waited for (COORDINATOR_REDIS_TIMEOUT_MS). */
  public long timeoutMillis() {
    return timeoutMillis;
  }

  /** A call of one command (two on NOSCRIPT), each already bounded by Lettuce's command timeout. */
  private <T> Future<T> onContext(CompletableFuture<T> redisCall) {
    return Future.fromCompletionStage(redisCall, vertx.getOrCreateContext()).recover(e -> Future.failedFuture(unwrap(e)));
  }

  private static Throwable unwrap(Throwable e) {
    return e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
  }

  /** Fails with {@link BrokenBudgetException} when the budget's keys hold bad state. */
  public Future<BudgetStatus> status(String name) {
    return onContext(scripts.status(name, DEFAULTS)).map(BudgetStatus::of);
  }

  /** {@link #status} with the window bucket by bucket. */
  public Future<BudgetStatus> statusWithBuckets(String name) {
    return onContext(scripts.status(name, DEFAULTS, true)).map(BudgetStatus::of);
  }

  public Future<BudgetStatus> configure(String name, ConfigUpdate update) {
    ConfigChange change = new ConfigChange(update.ratioPpm(), update.windowSeconds(), update.minRetriesPerSecond(),
        update.mode(), update.maxCallsPerSecond());
    return onContext(scripts.configure(name, change, DEFAULTS)).compose(ignored -> status(name));
  }

  /**
   * Whether Redis holds a configuration of this budget that was set (by a PUT or the budgets file):
   * false when it holds none, or only a seed from a client (which the budgets file overrides).
   */
  public Future<Boolean> hasConfiguration(String name) {
    return onContext(scripts.status(name, DEFAULTS)).map(s -> s.source() == StatusReply.Source.SET);
  }

  /** Counts first attempts of a non-JVM client; {@link BudgetReply#MISSING} when the budget has no configuration. */
  public Future<BudgetReply> countRequests(String name, long count) {
    return budget(name, count, 0);
  }

  /** Asks for {@code count} permits, all or none; {@link BudgetReply#MISSING} as above. */
  public Future<BudgetReply> acquire(String name, long count) {
    return budget(name, 0, count);
  }

  private Future<BudgetReply> budget(String name, long requests, long permits) {
    // no client id: HTTP callers are many and unordered, so the script does not de-duplicate them.
    // Without auto-create nothing is seeded: the script answers "missing" and writes nothing.
    return onContext(scripts.budget(new BudgetCall(name, requests, 0, permits, permits, autoCreate ? DEFAULTS : null)));
  }

  /** Removes the budget's configuration, window and index entry atomically; false when it had none. */
  public Future<Boolean> delete(String name) {
    return onContext(scripts.delete(name));
  }

  /**
   * The budgets in Redis with their status, at most {@code limit} (sorted by name), the broken ones
   * apart. Names come from the index the scripts keep, so the cost does not depend on other keys.
   */
  public record Listing(List<BudgetStatus> budgets, List<BrokenBudgetException> broken, boolean truncated) {}

  /**
   * Listings share work, so no number of readers can crowd other calls off the Redis connection: one
   * computation at a time per limit, with at most {@link #LISTING_CONCURRENCY} status calls in
   * flight. A listing asked for while one runs waits for the next one, which starts when the running
   * one ends and serves every listing asked for meanwhile: each answer was read after it was asked
   * for (nothing is served from before, so a change in Redis by anyone is seen by the next
   * listing), and however many ask, at most two computations exist. Two starts are at least
   * {@link #LISTING_SPACING} apart: the queued one waits for that on a timer.
   */
  public Future<Listing> list(int limit) {
    return list(limit, false);
  }

  /**
   * {@link #list(int)}, each budget with its window bucket by bucket when {@code buckets} (the
   * status page's charts): listings with and without buckets share work each among themselves.
   */
  public Future<Listing> list(int limit, boolean buckets) {
    ListingKind kind = new ListingKind(limit, buckets);
    synchronized (listings) {
      ListingState s = listings.computeIfAbsent(kind, l -> new ListingState());
      if (s.running == null && s.queued == null) {
        long waitNanos = s.startedNanos + listingSpacingNanos - System.nanoTime();
        if (!s.started || waitNanos <= 0) {
          return startListing(s, kind);
        }
        s.queued = Promise.promise();
        Future<Listing> answer = s.queued.future();
        startLater(s, kind, waitNanos);
        return answer;
      }
      if (s.queued == null) {
        s.queued = Promise.promise();
      }
      return s.queued.future();
    }
  }

  private Future<Listing> startListing(ListingState s, ListingKind kind) {
    // under the lock of listings
    s.started = true;
    s.startedNanos = System.nanoTime();
    Future<Listing> f = computeListing(kind.limit(), kind.buckets());
    s.running = f;
    f.onComplete(r -> {
      synchronized (listings) {
        s.running = null;
        if (s.queued != null) {
          startLater(s, kind, s.startedNanos + listingSpacingNanos - System.nanoTime());
        }
      }
    });
    return f;
  }

  /** Starts the queued listing in {@code waitNanos} (now when 0 or less); askers meanwhile join it. Under the lock. */
  private void startLater(ListingState s, ListingKind kind, long waitNanos) {
    long waitMillis = (waitNanos + 999_999) / 1_000_000;
    if (waitMillis <= 0) {
      Promise<Listing> next = s.queued;
      s.queued = null;
      startListing(s, kind).onComplete(next);
      return;
    }
    s.running = Future.succeededFuture(); // a marker: the queued one is waiting for its start
    vertx.setTimer(waitMillis, id -> {
      synchronized (listings) {
        Promise<Listing> next = s.queued;
        s.queued = null;
        startListing(s, kind).onComplete(next);
      }
    });
  }

  /** Which listing: its limit, and whether each budget comes with its window bucket by bucket. */
  private record ListingKind(int limit, boolean buckets) {}

  /**
   * One kind's listings: the one running (or a marker while the queued one waits for its start),
   * the promise of the one queued behind it, and when the last one started.
   */
  private static final class ListingState {
    Future<?> running;
    Promise<Listing> queued;
    boolean started;
    long startedNanos;
  }

  private Future<Listing> computeListing(int limit, boolean buckets) {
    CompletableFuture<Void> deadline = new CompletableFuture<>();
    CompletableFuture<SortedSet<String>> names0 = scripts.listNames(deadline);
    // one read on a standalone Redis; on a Cluster one list.lua call per master (Redis 7), or one read
    // per slot's index (16384, 0.3 to 1.4 s: Redis 6.2), whatever else Redis holds: a Cluster's names
    // get a longer deadline
    long namesMillis = scripts.store().options().isCluster() ? Math.max(timeoutMillis, CLUSTER_NAMES_TIMEOUT_MILLIS)
        : timeoutMillis;
    return onContext(names0.orTimeout(namesMillis, TimeUnit.MILLISECONDS)).onComplete(done -> deadline.complete(null))
        .compose(names -> {
      List<String> wanted = new ArrayList<>(Math.min(names.size(), limit + 1));
      for (String n : names) {
        if (wanted.size() > limit) {
          break;
        }
        wanted.add(n);
      }
      List<Future<BudgetStatus>> all = statuses(wanted, buckets);
      return Future.join(all).transform(done -> {
        List<BudgetStatus> out = new ArrayList<>();
        List<BrokenBudgetException> broken = new ArrayList<>();
        Throwable redisFailure = null;
        for (Future<BudgetStatus> f : all) {
          if (f.succeeded()) {
            if (f.result().exists()) {
              out.add(f.result());
            }
          } else if (f.cause() instanceof BrokenBudgetException b) {
            broken.add(b);
          } else {
            redisFailure = f.cause();
          }
        }
        if (redisFailure != null) {
          return Future.failedFuture(redisFailure);
        }
        boolean truncated = out.size() + broken.size() > limit;
        while (out.size() + broken.size() > limit) {
          // names are sorted; drop the last one listed
          if (!out.isEmpty() && (broken.isEmpty()
              || out.get(out.size() - 1).name().compareTo(broken.get(broken.size() - 1).budget()) > 0)) {
            out.remove(out.size() - 1);
          } else {
            broken.remove(broken.size() - 1);
          }
        }
        return Future.succeededFuture(new Listing(out, broken, truncated));
      });
    });
  }

  /**
   * The status of every name, at most {@link #LISTING_CONCURRENCY} calls in flight: each lane takes
   * the next name when its call completes. After a failure of Redis (not of one budget's data) the
   * names not yet asked fail with it, as the listing does.
   */
  private List<Future<BudgetStatus>> statuses(List<String> names, boolean buckets) {
    List<Promise<BudgetStatus>> results = new ArrayList<>(names.size());
    List<Future<BudgetStatus>> futures = new ArrayList<>(names.size());
    for (int i = 0; i < names.size(); i++) {
      Promise<BudgetStatus> p = Promise.promise();
      results.add(p);
      futures.add(p.future());
    }
    AtomicInteger next = new AtomicInteger();
    AtomicReference<Throwable> redisFailure = new AtomicReference<>();
    Runnable[] lane = new Runnable[1];
    lane[0] = () -> {
      while (true) {
        int i = next.getAndIncrement();
        if (i >= names.size()) {
          return;
        }
        Throwable failed = redisFailure.get();
        if (failed != null) {
          results.get(i).fail(failed);
          continue;
        }
        Future<BudgetStatus> f = statusOrBroken(names.get(i), buckets);
        if (f.isComplete()) {
          results.get(i).handle(f);
          continue;
        }
        f.onComplete(r -> {
          if (r.failed() && !(r.cause() instanceof BrokenBudgetException)) {
            redisFailure.compareAndSet(null, r.cause());
          }
          results.get(i).handle(r);
          lane[0].run();
        });
        return;
      }
    };
    for (int k = 0; k < Math.min(LISTING_CONCURRENCY, names.size()); k++) {
      lane[0].run();
    }
    return futures;
  }

  private Future<BudgetStatus> statusOrBroken(String n, boolean buckets) {
    // the index is data in Redis: a member no budget may be named (written by hand) is listed as
    // broken, not read (its keys cannot be built) and not a reason to fail the whole listing
    return BudgetNames.isValid(n) ? (buckets ? statusWithBuckets(n) : status(n)) : Future.failedFuture(new BrokenBudgetException(n,
        scripts.store().options().isCluster() ? BudgetKeys.STANDALONE_INDEX + ":{...}" : BudgetKeys.STANDALONE_INDEX,
        "member", "is not a valid budget name ([A-Za-z0-9._-]{1,100}); remove it with ZREM"));
  }

  public Future<String> ping() {
    return onContext(scripts.store().ping());
  }
}
