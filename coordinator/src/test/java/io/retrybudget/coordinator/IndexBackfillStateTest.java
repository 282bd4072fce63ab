package io.retrybudget.coordinator;

import io.retrybudget.coordinator.budgets.IndexBackfill;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.ScanCursor;
import io.retrybudget.budget.redis.protocol.BudgetScripts.ScanStep;
import io.retrybudget.testing.Eventually;
import io.vertx.core.Vertx;
import java.time.Duration;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The backfill's state machine against a made-up keyspace whose answers fail and come late at
 * random, whose masters die and are replaced mid-scan: it ends DONE with every name indexed, never
 * has two steps outstanding, and once stopped sends nothing more.
 */
class IndexBackfillStateTest {
  private Vertx vertx;

  @BeforeEach
  void start() {
    vertx = Vertx.vertx();
  }

  @AfterEach
  void close() throws Exception {
    vertx.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
  }

  /** Three masters of ~5,461 slots; each slot holds one name; failovers swap a master's id. */
  static final class Keyspace implements IndexBackfill.Source {
    final Random random;
    final String[] owner = new String[IndexBackfill.SLOTS];
    final Set<String> dead = ConcurrentHashMap.newKeySet();
    final Set<String> indexed = ConcurrentHashMap.newKeySet();
    final AtomicInteger outstanding = new AtomicInteger();
    final AtomicInteger mostOutstanding = new AtomicInteger();
    final AtomicInteger calls = new AtomicInteger();
    final Vertx vertx;
    int generation;

    Keyspace(Vertx vertx, long seed) {
      this.vertx = vertx;
      this.random = new Random(seed);
      for (int s = 0; s < owner.length; s++) {
        owner[s] = "m" + (s * 3 / owner.length) + "-0";
      }
    }

    /** The master {@code m} dies; with {@code replaced}, its replica takes its slots under a new id. */
    synchronized void kill(int m, boolean replaced) {
      String id = null;
      for (String o : owner) {
        if (o.startsWith("m" + m + "-")) {
          id = o;
          break;
        }
      }
      dead.add(id);
      if (replaced) {
        String heir = "m" + m + "-" + (++generation);
        for (int s = 0; s < owner.length; s++) {
          if (owner[s].equals(id)) {
            owner[s] = heir;
          }
        }
      }
    }

    @Override
    public synchronized List<IndexBackfill.Shard> shards() {
      List<IndexBackfill.Shard> shards = new ArrayList<>();
      List<String> ids = new ArrayList<>();
      for (String o : owner) {
        if (!ids.contains(o)) {
          ids.add(o);
        }
      }
      for (String id : ids) {
        BitSet slots = new BitSet();
        for (int s = 0; s < owner.length; s++) {
          if (owner[s].equals(id)) {
            slots.set(s);
          }
        }
        shards.add(new IndexBackfill.Shard(id, id, slots));
      }
      return shards;
    }

    @Override
    public CompletableFuture<ScanStep> scan(IndexBackfill.Shard shard, ScanCursor cursor, long count) {
      int now = outstanding.incrementAndGet();
      mostOutstanding.accumulateAndGet(now, Math::max);
      calls.incrementAndGet();
      int from = cursor == null ? 0 : Integer.parseInt(cursor.getCursor());
      CompletableFuture<ScanStep> f = new CompletableFuture<>();
      boolean fails;
      List<String> names = new ArrayList<>();
      int to;
      synchronized (this) {
        fails = dead.contains(shard.id()) || random.nextInt(10) == 0;
        to = Math.min(IndexBackfill.SLOTS, from + 500 + random.nextInt(1000));
        for (int s = from; s < to; s++) {
          if (owner[s].equals(shard.id())) {
            names.add("b" + s);
          }
        }
      }
      long delay = 1 + random.nextInt(3);
      vertx.setTimer(delay, id -> {
        outstanding.decrementAndGet();
        if (fails) {
          f.completeExceptionally(new RuntimeException("no answer from " + shard.id()));
          return;
        }
        KeyScanCursor<String> next = new KeyScanCursor<>();
        next.setCursor(Integer.toString(to));
        next.setFinished(to >= IndexBackfill.SLOTS);
        f.complete(new ScanStep(names, next, to >= IndexBackfill.SLOTS));
      });
      return f;
    }

    @Override
    public CompletableFuture<Boolean> index(String name) {
      return CompletableFuture.completedFuture(indexed.add(name));
    }
  }

  @Test
  void endsWithEveryNameThroughFailuresAndFailovers() {
    for (long n = 1; n <= 8; n++) {
      long seed = n;
      Keyspace keys = new Keyspace(vertx, seed);
      IndexBackfill b = IndexBackfill.start(new IndexBackfill(vertx, keys, 1, 5, 1_000, System::nanoTime));
      vertx.setTimer(3 + seed, id -> keys.kill((int) (seed % 3), true));
      vertx.setTimer(20 + seed, id -> keys.kill((int) ((seed + 1) % 3), true));
      Eventually.await("seed " + seed + " ends", Duration.ofSeconds(20), () -> b.state() != IndexBackfill.State.RUNNING);
      assertEquals(IndexBackfill.State.DONE, b.state(), "seed " + seed);
      assertEquals(IndexBackfill.SLOTS, keys.indexed.size(), "seed " + seed + ": every name");
      assertEquals(IndexBackfill.SLOTS, b.added(), "seed " + seed);
      assertEquals(1, keys.mostOutstanding.get(), "seed " + seed + ": one step at a time");
    }
  }

  @Test
  void aMasterNobodyReplacesIsLeftAfterTheFailuresAndTheRestIsDone() {
    Keyspace keys = new Keyspace(vertx, 42);
    keys.kill(0, false);
    IndexBackfill b = IndexBackfill.start(new IndexBackfill(vertx, keys, 1, 5, 30, System::nanoTime));
    Eventually.await("it gives up", Duration.ofSeconds(20), () -> b.state() != IndexBackfill.State.RUNNING);
    assertEquals(IndexBackfill.State.GAVE_UP, b.state());
    // masters 1 and 2 hold slots 5462.. (one name each)
    for (int s = 0; s < IndexBackfill.SLOTS; s++) {
      assertEquals(!keys.owner[s].startsWith("m0-"), keys.indexed.contains("b" + s), "slot " + s);
    }
  }

  @Test
  void stoppedMeansNoMoreCalls() {
    Keyspace keys = new Keyspace(vertx, 7);
    keys.kill(1, false);
    IndexBackfill b = IndexBackfill.start(new IndexBackfill(vertx, keys, 1, 5, 1_000_000, System::nanoTime));
    Eventually.await("under way", Duration.ofSeconds(10), () -> keys.calls.get() > 20);
    b.stop();
    // stopped, with no step and no timer outstanding: nothing is left that could call Redis again
    Eventually.await("stopped and quiet", Duration.ofSeconds(10), () -> b.state() == IndexBackfill.State.STOPPED
        && b.quiet() && keys.outstanding.get() == 0);
    assertTrue(b.failedSteps() > 0);
  }
}
