package io.retrybudget.server;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;

/**
 * An in-process model of Redis running {@code lua/idempotency-*.lua} (claim, complete, release,
 * renew: same replies, same fencing, same lease and TTL rules) on {@link FakeClock}, with the faults
 * a real one has: reply latency (a reply later than the store timeout fails the caller's future,
 * though the script ran), a pause (SIGSTOP: commands queue and run at resume, callers time out
 * meanwhile), a restart without persistence (every record lost; commands refused while it is down)
 * and FLUSHALL. A {@link Flaw} makes it a deliberately broken store, for the checker to catch.
 */
final class ClaimModel implements ClaimBackend {
  /** Deliberate defects of the store. */
  enum Flaw {
    NONE,
    /** Renewals answer "renewed" but do not extend the lease (a lapse while the holder runs). */
    RENEW_DOES_NOTHING,
    /** A claim is granted even when another holder's lease runs (no mutual exclusion). */
    CLAIM_IGNORES_BUSY,
    /** Complete answers "stored" but keeps nothing (the next duplicate executes again). */
    COMPLETE_FORGETS,
    /** A replay gives back another body than the one stored. */
    REPLAY_ALTERED,
    /** Release answers "released" but leaves the record busy for ten leases. */
    RELEASE_STICKS
  }

  static final class Record {
    String state;
    String fp;
    long fence;
    long untilMs;
    long expireAtMs;
    StoredResponse answer;
  }

  private final FakeClock clock;
  private final Random random;
  private final Duration timeout;
  private final Flaw flaw;
  final Map<String, Record> data = new HashMap<>();
  /** Every answer a complete script stored, by record key (whether or not its reply arrived). */
  final Map<String, java.util.List<StoredResponse>> stored = new HashMap<>();
  private final ArrayDeque<Runnable> queued = new ArrayDeque<>();
  private long lastFence;
  private int maxLatencyMs = 2;
  private boolean paused;
  private boolean down;

  ClaimModel(FakeClock clock, Random random, Duration timeout, Flaw flaw) {
    this.clock = clock;
    this.random = random;
    this.timeout = timeout;
    this.flaw = flaw;
  }

  @Override
  public Duration timeout() {
    return timeout;
  }

  void maxLatencyMs(int ms) {
    maxLatencyMs = ms;
  }

  void pause() {
    paused = true;
  }

  void resume() {
    paused = false;
    while (!queued.isEmpty() && !paused) {
      queued.poll().run();
    }
  }

  /** Killed: queued commands and every record are lost; commands are refused until {@link #start}. */
  void kill() {
    down = true;
    paused = false;
    queued.clear();
    data.clear();
  }

  void start() {
    down = false;
  }

  void flushAll() {
    data.clear();
  }

  /** The live record of {@code key} (expired ones are gone, as in Redis). */
  Record record(String key) {
    Record r = data.get(key);
    if (r != null && r.expireAtMs <= clock.millis()) {
      data.remove(key);
      return null;
    }
    return r;
  }

  private <T> CompletableFuture<T> run(Supplier<T> script) {
    CompletableFuture<T> answer = new CompletableFuture<>();
    clock.schedule(() -> answer.completeExceptionally(new TimeoutException("store timeout")), timeout.toNanos());
    if (down) {
      clock.afterMillis(0, () -> answer.completeExceptionally(new IllegalStateException("connection refused")));
      return answer;
    }
    Runnable command = () -> {
      T reply = script.get();
      clock.afterMillis(random.nextInt(maxLatencyMs + 1), () -> answer.complete(reply));
    };
    // the command reaches Redis after a little network time, then runs or queues while paused
    clock.afterMillis(random.nextInt(2), () -> {
      if (down) {
        return; // lost with the process
      }
      if (paused) {
        queued.add(command);
      } else {
        command.run();
      }
    });
    return answer;
  }

  @Override
  public CompletableFuture<Claim> claim(String key, String fingerprint, Duration lease) {
    return run(() -> {
      long now = clock.millis();
      Record r = record(key);
      if (r != null) {
        if (!r.fp.equals(fingerprint)) {
          return new Claim.Mismatch();
        }
        if (r.state.equals("done")) {
          StoredResponse a = r.answer;
          if (flaw == Flaw.REPLAY_ALTERED) {
            a = new StoredResponse(a.status(), a.headers(), (new String(a.body()) + " ").getBytes());
          }
          return new Claim.Done(a);
        }
        if (r.untilMs > now && flaw != Flaw.CLAIM_IGNORES_BUSY) {
          return new Claim.Busy(r.untilMs - now);
        }
      }
      boolean takeover = r != null;
      long fence = Math.max(clock.nanos() / 1000, lastFence + 1); // Redis's TIME in µs, raised above the last
      lastFence = fence;
      Record n = new Record();
      n.state = "busy";
      n.fp = fingerprint;
      n.fence = fence;
      n.untilMs = now + lease.toMillis();
      n.expireAtMs = now + 2 * lease.toMillis();
      data.put(key, n);
      return new Claim.Claimed(key, fence, takeover);
    });
  }

  private static boolean holds(Record r, Claim.Claimed claim) {
    return r != null && r.state.equals("busy") && r.fence == claim.fence();
  }

  @Override
  public CompletableFuture<Boolean> complete(Claim.Claimed claim, StoredResponse response, Duration ttl) {
    return run(() -> {
      Record r = record(claim.key());
      if (!holds(r, claim)) {
        return false;
      }
      if (flaw == Flaw.COMPLETE_FORGETS) {
        data.remove(claim.key());
        return true;
      }
      r.state = "done";
      r.answer = response;
      stored.computeIfAbsent(claim.key(), k -> new java.util.ArrayList<>()).add(response);
      r.expireAtMs = clock.millis() + ttl.toMillis();
      return true;
    });
  }

  @Override
  public CompletableFuture<Boolean> release(Claim.Claimed claim) {
    return run(() -> {
      Record r = record(claim.key());
      if (!holds(r, claim)) {
        return false;
      }
      if (flaw == Flaw.RELEASE_STICKS) {
        long lease = (r.expireAtMs - r.untilMs);
        r.untilMs = clock.millis() + 10 * lease;
        r.expireAtMs = r.untilMs + lease;
        return true;
      }
      data.remove(claim.key());
      return true;
    });
  }

  @Override
  public CompletableFuture<Boolean> renew(Claim.Claimed claim, Duration lease) {
    return run(() -> {
      Record r = record(claim.key());
      if (!holds(r, claim)) {
        return false;
      }
      if (flaw != Flaw.RENEW_DOES_NOTHING) {
        r.untilMs = clock.millis() + lease.toMillis();
        r.expireAtMs = clock.millis() + 2 * lease.toMillis();
      }
      return true;
    });
  }
}
