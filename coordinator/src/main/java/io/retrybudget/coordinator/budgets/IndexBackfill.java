package io.retrybudget.coordinator.budgets;

import io.lettuce.core.ScanCursor;
import io.retrybudget.budget.redis.protocol.BrokenBudgetException;
import io.retrybudget.budget.redis.protocol.BudgetScripts;
import io.retrybudget.budget.redis.protocol.BudgetScripts.ScanStep;
import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * Once per coordinator start, in the background: lists in the index of budget names every budget
 * whose configuration key exists but is not listed (written before the index existed, by an older
 * version). A SCAN with MATCH {@code rb:v2:{*}:cfg} and COUNT {@link #COUNT}, one step every
 * {@link #PACE_MS} ms (so at most about 20,000 keys looked at a second, whatever Redis holds), and
 * for each name found one {@code index.lua} call, {@link #BATCH} at a time. Runs on a Vert.x context:
 * nothing waits, the event loop is never blocked.
 *
 * <p>What is scanned is tracked by slot: a standalone Redis is one shard with every slot, a Cluster
 * one shard per master with the slots it serves (as the client last saw the topology). A shard's
 * slots are done when its own SCAN ends. A step that fails (the master is dead, the Cluster is down,
 * an index call failed) puts that master aside for {@link #RETRY_MS} ms, keeping its cursor, and the
 * backfill goes on with the other masters; its slots are tried again after that, on whichever master
 * serves them then (after a failover the promoted replica, from a cursor of its own). After
 * {@link #MAX_FAILURES} failed steps in a row the backfill gives up with one WARNING naming the
 * masters and how many slots were left (the next start tries again, and each budget is indexed at
 * its next use anyway); a failed step itself is logged at FINE only.
 *
 * <p>States: running (exactly one step or one timer outstanding) → done | gave up | stopped. A
 * step's reply that arrives after {@link #stop()} does nothing; so does a timer that fires late.
 */
public final class IndexBackfill {
  private static final Logger LOG = Logger.getLogger(IndexBackfill.class.getName());
  static final long COUNT = 1000;
  static final long PACE_MS = 50;
  static final int BATCH = 100;
  static final long RETRY_MS = 1_000;
  static final int MAX_FAILURES = 60;
  public static final int SLOTS = 16384;

  public enum State { RUNNING, DONE, GAVE_UP, STOPPED }

  /** Part of the keyspace that one SCAN walks: a standalone Redis, or one Cluster master. */
  public record Shard(String id, String address, BitSet slots) {}

  /** Where the backfill reads and writes: Redis, through the budget scripts. */
  public interface Source {
    /** The shards now (a Cluster: the masters as the client last saw them). */
    List<Shard> shards();

    /** One SCAN step on {@code shard}, its own cursor ({@code null} to start). */
    CompletableFuture<ScanStep> scan(Shard shard, ScanCursor cursor, long count);

    /** index.lua for one name: true when it added the name. */
    CompletableFuture<Boolean> index(String name);
  }

  private final Vertx vertx;
  private final Context context;
  private final Source source;
  private final long paceMs;
  private final long retryMs;
  private final int maxFailures;
  private final LongSupplier nanoTime;
  private volatile State state = State.RUNNING;
  private volatile long added;
  private volatile long steps;
  private volatile long failedSteps;
  // the context only:
  /** Slots whose keys no finished SCAN has walked yet. */
  private final BitSet pending = new BitSet(SLOTS);
  /** Per shard id: the cursor its SCAN goes on from, and the slots it served when that SCAN began. */
  private final Map<String, ScanCursor> cursors = new HashMap<>();
  private final Map<String, BitSet> scanning = new HashMap<>();
  /** Per shard id: until when (nanoTime) it is put aside after a failed step. */
  private final Map<String, Long> asideUntil = new HashMap<>();
  /** Where the failed steps in a row were tried (for the one WARNING). */
  private final Set<String> failing = new LinkedHashSet<>();
  private int failures;
  private volatile long timer = -1;
  /** A step's SCAN or index calls are outstanding. */
  private volatile boolean inStep;

  public IndexBackfill(Vertx vertx, Source source, long paceMs, long retryMs, int maxFailures, LongSupplier nanoTime) {
    this.vertx = vertx;
    this.context = vertx.getOrCreateContext();
    this.source = source;
    this.paceMs = paceMs;
    this.retryMs = retryMs;
    this.maxFailures = maxFailures;
    this.nanoTime = nanoTime;
    pending.set(0, SLOTS);
  }

  /** Starts the backfill now on a context of {@code vertx}. */
  public static IndexBackfill start(Vertx vertx, BudgetScripts scripts, RedisBudgetStore store) {
    return start(new IndexBackfill(vertx, source(scripts, store), PACE_MS, RETRY_MS, MAX_FAILURES, System::nanoTime));
  }

  public static IndexBackfill start(IndexBackfill b) {
    b.context.runOnContext(v -> b.step());
    return b;
  }

  /** Redis through the scripts: on a Cluster one shard per master, scanned on that master alone. */
  public static Source source(BudgetScripts scripts, RedisBudgetStore store) {
    boolean cluster = store.options().isCluster();
    BitSet every = new BitSet(SLOTS);
    every.set(0, SLOTS);
    Shard standalone = new Shard("standalone", "redis", every);
    return new Source() {
      @Override
      public List<Shard> shards() {
        if (!cluster) {
          return List.of(standalone);
        }
        List<Shard> shards = new ArrayList<>();
        for (RedisBudgetStore.ClusterMaster m : store.clusterMasters()) {
          shards.add(new Shard(m.nodeId(), m.address(), m.slots()));
        }
        return shards;
      }

      @Override
      public CompletableFuture<ScanStep> scan(Shard shard, ScanCursor cursor, long count) {
        return cluster ? scripts.scanConfigurations(shard.id(), cursor, count) : scripts.scanConfigurations(cursor, count);
      }

      @Override
      public CompletableFuture<Boolean> index(String name) {
        return scripts.index(name);
      }
    };
  }

  public State state() {
    return state;
  }

  /** Budgets added to the index so far. */
  public long added() {
    return added;
  }

  long steps() {
    return steps;
  }

  /** Steps that failed so far (each put its master aside for a while). */
  public long failedSteps() {
    return failedSteps;
  }

  /** Neither a step nor a timer is outstanding: nothing will call Redis again (tests). */
  public boolean quiet() {
    return !inStep && timer < 0;
  }

  /** Stops at the next step (on any thread); idempotent. */
  public void stop() {
    context.runOnContext(v -> {
      if (state == State.RUNNING) {
        state = State.STOPPED;
      }
      if (timer >= 0) {
        vertx.cancelTimer(timer);
        timer = -1;
      }
    });
  }

  private void after(long millis) {
    timer = vertx.setTimer(Math.max(1, millis), id -> {
      timer = -1;
      step();
    });
  }

  private void step() {
    if (state != State.RUNNING) {
      return;
    }
    if (pending.isEmpty()) {
      // logged before the state is published: whoever sees DONE (a test, the health check) sees the line too
      if (added > 0 || failedSteps > 0) {
        LOG.info("index backfill: listed " + added + " budgets configured before the index existed"
            + (failedSteps > 0 ? " (" + failedSteps + " steps failed and were tried again)" : ""));
      }
      state = State.DONE;
      return;
    }
    List<Shard> shards;
    try {
      shards = source.shards();
    } catch (RuntimeException e) {
      failed("the topology", e, retryMs);
      return;
    }
    long now = nanoTime.getAsLong();
    Shard next = null;
    long soonest = Long.MAX_VALUE;
    for (Shard s : shards) {
      if (!s.slots().intersects(pending)) {
        continue;
      }
      Long aside = asideUntil.get(s.id());
      if (aside != null && aside - now > 0) {
        soonest = Math.min(soonest, aside - now);
        continue;
      }
      next = s;
      break;
    }
    if (next == null) {
      if (soonest == Long.MAX_VALUE) {
        // no master serves the slots left (a Cluster with slots unassigned): a failed step
        failed("no master for " + pending.cardinality() + " slots", null, retryMs);
      } else {
        after(TimeUnit.NANOSECONDS.toMillis(soonest) + 1);
      }
      return;
    }
    Shard shard = next;
    ScanCursor cursor = cursors.get(shard.id());
    if (cursor == null) {
      BitSet served = (BitSet) shard.slots().clone();
      scanning.put(shard.id(), served);
    }
    steps++;
    inStep = true;
    CompletableFuture<ScanStep> scanned;
    try {
      scanned = source.scan(shard, cursor, COUNT);
    } catch (RuntimeException e) {
      scanned = CompletableFuture.failedFuture(e);
    }
    Future.fromCompletionStage(scanned, context)
        .compose(found -> indexAll(found.names(), 0).map(found))
        .onComplete(done -> {
          inStep = false;
          if (state != State.RUNNING) {
            return;
          }
          if (done.failed()) {
            asideUntil.put(shard.id(), nanoTime.getAsLong() + TimeUnit.MILLISECONDS.toNanos(retryMs));
            failed(shard.address(), done.cause(), paceMs);
            return;
          }
          failures = 0;
          failing.clear();
          asideUntil.remove(shard.id());
          ScanStep result = done.result();
          if (result.finished()) {
            BitSet walked = scanning.remove(shard.id());
            if (walked != null) {
              // (a slot it gained while its SCAN ran stays pending: its keys may have been missed)
              walked.and(shard.slots());
              pending.andNot(walked);
            }
            cursors.remove(shard.id());
          } else {
            cursors.put(shard.id(), result.cursor());
          }
          after(paceMs);
        });
  }

  /** A failed step: the next one after {@code againMs} (another master, or this one once put aside), or give up. */
  private void failed(String where, Throwable cause, long againMs) {
    failedSteps++;
    failing.add(where);
    if (++failures >= maxFailures) {
      LOG.warning("index backfill gave up after " + failures + " failed steps in a row on " + failing + " ("
          + added + " budgets added; " + pending.cardinality() + " of " + SLOTS + " slots not scanned): " + cause);
      state = State.GAVE_UP; // after the line, as DONE
      return;
    }
    LOG.log(Level.FINE, "index backfill step on " + where + " failed; going on with the others, this one again in "
        + retryMs + " ms", cause);
    after(againMs);
  }

  /** index.lua for names[from..], {@link #BATCH} at a time; a broken key is skipped (listing flags it). */
  private Future<Void> indexAll(List<String> names, int from) {
    if (from >= names.size() || state != State.RUNNING) {
      return Future.succeededFuture();
    }
    int to = Math.min(names.size(), from + BATCH);
    List<Future<Boolean>> batch = new ArrayList<>(to - from);
    for (int i = from; i < to; i++) {
      CompletableFuture<Boolean> indexed;
      try {
        indexed = source.index(names.get(i));
      } catch (RuntimeException e) {
        indexed = CompletableFuture.failedFuture(e);
      }
      batch.add(Future.fromCompletionStage(indexed, context)
          .recover(e -> e instanceof BrokenBudgetException || unwrapped(e)
              ? Future.succeededFuture(false) : Future.failedFuture(e)));
    }
    return Future.all(batch).compose(all -> {
      for (Future<Boolean> f : batch) {
        if (Boolean.TRUE.equals(f.result())) {
          added++;
        }
      }
      return indexAll(names, to);
    });
  }

  private static boolean unwrapped(Throwable e) {
    return e instanceof CompletionException && e.getCause() instanceof BrokenBudgetException;
  }
}
