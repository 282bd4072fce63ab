package io.retrybudget.server;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;

/**
 * One random schedule for {@link ExactlyOnceCheckerTest}: duplicates of a few keys at random times
 * through the real {@link IdempotencyGuard} (begin, then {@link IdempotencyGuard#handle} as the
 * Vert.x adapter calls it) on {@link FakeClock} and {@link ClaimModel}; handlers whose durations lie
 * around {@code handlerTimeout} and beyond, that fail after their side effect, refuse before it, or
 * throw before starting; faults: slow replies, Redis paused, killed and restarted (data lost),
 * flushed. Every side effect (a fenced write to a ledger) and every answer is recorded in a
 * {@link History} that the checker judges afterwards.
 */
final class ExactlyOnceSchedule {
  static final Duration HANDLER_TIMEOUT = Duration.ofMillis(100);
  static final Duration LEASE_MARGIN = Duration.ofMillis(50);
  static final Duration MAX_HOLD = Duration.ofMillis(600);
  static final Duration STORE_TIMEOUT = Duration.ofMillis(20);
  static final long LEASE_MS = HANDLER_TIMEOUT.plus(LEASE_MARGIN).toMillis();
  static final long ARRIVALS_MS = 1_200;

  enum Behaviour { OK, STATUS_500, FAILED_AFTER_EFFECT, DENIED_403, REJECTED_BEFORE, THROWN_BEFORE }

  /** One handler invocation. */
  static final class Exec {
    final String key;
    final IdempotencyGuard.Execution execution;
    final Behaviour behaviour;
    final long startMs;
    final long durationMs;
    long endMs = -1;
    boolean effect; // it wrote (or tried to write) its side effect
    boolean effectApplied; // the ledger took the write (not fenced off)
    StoredResponse clientGot; // what its own client was sent

    Exec(String key, IdempotencyGuard.Execution execution, Behaviour behaviour, long startMs, long durationMs) {
      this.key = key;
      this.execution = execution;
      this.behaviour = behaviour;
      this.startMs = startMs;
      this.durationMs = durationMs;
    }

    long fence() {
      return execution.claim().fence();
    }
  }

  /** An answer a client got: replayed or not, from which execution (null for the guard's own answers). */
  record Answer(String key, long atMs, StoredResponse response, Throwable failure, Exec from) {}

  /** What happened, for the checker. */
  static final class History {
    final List<Exec> execs = new ArrayList<>();
    final List<Answer> answers = new ArrayList<>();
    final List<String> violations = new ArrayList<>();
    final List<Long> dataLossAtMs = new ArrayList<>();
    boolean outage; // paused, killed or replies slower than the store timeout at some point
    final List<long[]> outages = new ArrayList<>(); // [from, to] ms: paused, down, or replies slower than the store timeout
    boolean storeAll;
    long ledgerRefused;
    Map<String, List<StoredResponse>> stored;
  }

  private final Random rnd;
  private final FakeClock clock = new FakeClock();
  private final ClaimModel store;
  private final IdempotencyGuard guard;
  private final History history = new History();
  private final Map<String, Long> ledger = new HashMap<>(); // key -> highest fence written
  private final Map<Long, Exec> byFence = new HashMap<>();
  private final long startMs;

  ExactlyOnceSchedule(long seed, ClaimModel.Flaw flaw) {
    this.rnd = new Random(seed);
    this.store = new ClaimModel(clock, rnd, STORE_TIMEOUT, flaw);
    history.storeAll = rnd.nextBoolean();
    IdempotencyConfig config = IdempotencyConfig.builder().handlerTimeout(HANDLER_TIMEOUT).leaseMargin(LEASE_MARGIN)
        .maxHold(MAX_HOLD).outcomes(history.storeAll ? OutcomePolicy.STORE_ALL : OutcomePolicy.STANDARD)
        .waitForInProgress(rnd.nextBoolean() ? Duration.ZERO : Duration.ofMillis(150)).build();
    this.guard = new IdempotencyGuard(store, config, ServerKitListener.NONE, clock, clock::nanos);
    this.startMs = clock.millis();
  }

  History run() {
    int keys = 1 + rnd.nextInt(3);
    for (int k = 0; k < keys; k++) {
      String key = "k" + k;
      int requests = 1 + (int) (Math.pow(rnd.nextDouble(), 3) * 49); // 1 to 50, mostly few
      for (int i = 0; i < requests; i++) {
        clock.afterMillis(rnd.nextInt((int) ARRIVALS_MS), () -> send(key));
      }
    }
    drawFaults();
    long horizon = clock.nanos() + Duration.ofMillis(ARRIVALS_MS + 5_000).toNanos();
    watchClaims();
    if (!clock.drain(horizon)) {
      history.violations.add("timers still armed after every handler ended");
    }
    // everything has ended: one lease (and a tick) later no claim may still block its key
    clock.runUntil(clock.nanos() + Duration.ofMillis(LEASE_MS + 10).toNanos());
    for (String key : List.copyOf(store.data.keySet())) {
      ClaimModel.Record r = store.record(key);
      if (r != null && r.state.equals("busy") && r.untilMs > clock.millis()) {
        history.violations.add("a claim still blocks its key a lease after every holder ended");
      }
    }
    for (Exec x : history.execs) {
      if (x.execution.run().phase() != ClaimLifecycle.Phase.ENDED) {
        history.violations.add("a claim's lifecycle never ended: " + x.execution.run());
      }
      if (x.execution.run().livenessBrokenBy() != null) {
        history.violations.add("a claim's lifecycle was not live after " + x.execution.run().livenessBrokenBy());
      }
    }
    if (guard.renewing() != 0) {
      history.violations.add(guard.renewing() + " claims still renewed after every handler ended");
    }
    guard.close();
    history.stored = store.stored;
    return history;
  }

  private long now() {
    return clock.millis() - startMs;
  }

  private void drawFaults() {
    int kind = rnd.nextInt(20);
    if (kind < 9) {
      return; // no fault
    }
    int faults = kind == 19 ? 2 : 1;
    for (int f = 0; f < faults; f++) {
      long at = rnd.nextInt((int) ARRIVALS_MS + 400);
      switch (rnd.nextInt(4)) {
        case 0 -> { // slow replies: some later than the store timeout (the script ran, the caller gave up)
          long span = 20 + rnd.nextInt(300);
          clock.afterMillis(at, () -> { history.outage = true; store.maxLatencyMs(40); });
          clock.afterMillis(at + span, () -> store.maxLatencyMs(2));
          history.outages.add(new long[] {at, at + span + 40});
        }
        case 1 -> { // SIGSTOP / SIGCONT
          long span = 10 + rnd.nextInt(400);
          clock.afterMillis(at, () -> { history.outage = true; store.pause(); });
          clock.afterMillis(at + span, store::resume);
          history.outages.add(new long[] {at, at + span});
        }
        case 2 -> { // kill -9 and a restart without persistence
          long span = rnd.nextInt(50);
          clock.afterMillis(at, () -> { history.outage = true; history.dataLossAtMs.add(now()); store.kill(); });
          clock.afterMillis(at + span, store::start);
          history.outages.add(new long[] {at, at + span});
        }
        default -> clock.afterMillis(at, () -> { history.dataLossAtMs.add(now()); store.flushAll(); });
      }
    }
  }

  /**
   * Every 5 ms while anything else is scheduled: a busy, unexpired claim whose holder ended more
   * than one lease ago is stuck.
   */
  private void watchClaims() {
    clock.afterMillis(5, () -> {
      long nowMs = clock.millis();
      for (String key : List.copyOf(store.data.keySet())) {
        ClaimModel.Record r = store.record(key);
        if (r == null || !r.state.equals("busy") || r.untilMs <= nowMs) {
          continue;
        }
        Exec holder = byFence.get(r.fence);
        if (holder != null && holder.endMs >= 0 && now() > holder.endMs + LEASE_MS + 5) {
          history.violations.add("claim of " + holder.key + " held " + (now() - holder.endMs) + " ms after its holder ended");
          r.untilMs = nowMs; // reported once
        }
      }
      if (clock.pending() > 0) {
        watchClaims();
      }
    });
  }

  private void send(String key) {
    guard.begin(request(key)).whenComplete((begin, error) -> {
      if (error != null) {
        history.violations.add("begin failed: " + error);
      } else if (begin instanceof IdempotencyGuard.Answer a) {
        history.answers.add(new Answer(key, now(), a.response(), null, null));
      } else {
        execute(key, ((IdempotencyGuard.Execute) begin).execution());
      }
    });
  }

  private void execute(String key, IdempotencyGuard.Execution execution) {
    if (!execution.guarded()) {
      history.violations.add("a guarded request ran without a claim");
      return;
    }
    Behaviour behaviour = behaviour();
    long duration = duration();
    Exec x = new Exec(key, execution, behaviour, now(), duration);
    history.execs.add(x);
    byFence.put(x.fence(), x);
    CompletableFuture<StoredResponse> answer = new CompletableFuture<>();
    switch (behaviour) {
      case THROWN_BEFORE -> answer.completeExceptionally(new IllegalStateException("threw before doing anything"));
      case REJECTED_BEFORE -> {
        execution.context().rejectedBeforeExecuting();
        clock.afterMillis(rnd.nextInt(3), () -> answer.complete(Problems.of(400, "invalid", "Invalid", "amount missing")));
      }
      default -> {
        clock.afterMillis(rnd.nextInt((int) duration + 1), () -> sideEffect(x));
        clock.afterMillis(duration, () -> {
          if (!x.effect) {
            sideEffect(x);
          }
          switch (behaviour) {
            case STATUS_500 -> answer.complete(response(500, "failed after charging " + x.fence()));
            case FAILED_AFTER_EFFECT -> answer.completeExceptionally(new IllegalStateException("failed after charging"));
            case DENIED_403 -> answer.complete(response(403, "denied " + x.fence()));
            default -> answer.complete(response(201, "charge " + x.fence()));
          }
        });
      }
    }
    answer.whenComplete((a, e) -> x.endMs = now());
    guard.handle(execution, answer).whenComplete((reply, error) -> {
      if (error != null) {
        history.violations.add("handle failed: " + error);
        return;
      }
      if (reply.response() != null && reply.response().status() != 503) {
        x.clientGot = reply.response();
      }
      history.answers.add(new Answer(key, now(), reply.response(), reply.failure(), x));
    });
  }

  /** The downstream write, fenced: a write with a lower token than one already taken is refused. */
  private void sideEffect(Exec x) {
    if (x.effect) {
      return;
    }
    x.effect = true;
    long highest = ledger.getOrDefault(x.key, Long.MIN_VALUE);
    if (x.fence() < highest) {
      history.ledgerRefused++;
      return;
    }
    ledger.put(x.key, x.fence());
    x.effectApplied = true;
  }

  private Behaviour behaviour() {
    int b = rnd.nextInt(100);
    return b < 55 ? Behaviour.OK : b < 65 ? Behaviour.STATUS_500 : b < 75 ? Behaviour.FAILED_AFTER_EFFECT
        : b < 80 ? Behaviour.DENIED_403 : b < 92 ? Behaviour.REJECTED_BEFORE : Behaviour.THROWN_BEFORE;
  }

  /** Around the handler timeout (100 ms): short, near it, long, and now and then beyond maxHold. */
  private long duration() {
    int d = rnd.nextInt(100);
    return d < 30 ? rnd.nextInt(60) : d < 70 ? 60 + rnd.nextInt(140) : d < 96 ? 200 + rnd.nextInt(350) : 650 + rnd.nextInt(300);
  }

  private static StoredResponse response(int status, String body) {
    return new StoredResponse(status, List.of(new StoredResponse.Header("Content-Type", "text/plain")),
        body.getBytes(StandardCharsets.UTF_8));
  }

  static boolean sameAnswer(StoredResponse a, StoredResponse b) {
    return a.status() == b.status() && Arrays.equals(a.body(), b.body())
        && String.valueOf(a.header("Content-Type")).equals(String.valueOf(b.header("Content-Type")));
  }

  private static RequestView request(String key) {
    byte[] body = ("{\"amount\":1,\"key\":\"" + key + "\"}").getBytes(StandardCharsets.UTF_8);
    return new RequestView() {
      public String method() { return "POST"; }
      public String route() { return "/payments"; }
      public String target() { return "/payments"; }
      public String header(String name) { return name.equalsIgnoreCase("Idempotency-Key") ? key : null; }
      public byte[] body() { return body; }
    };
  }
}
