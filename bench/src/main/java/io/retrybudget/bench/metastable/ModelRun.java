package io.retrybudget.bench.metastable;

import io.retrybudget.budget.LocalRetryBudget;
import io.retrybudget.budget.RetryBudget;
import io.retrybudget.retry.FakeTime;
import io.retrybudget.retry.RetryExecutor;
import io.retrybudget.retry.RetryPolicy;
import io.retrybudget.retry.http.HttpClientRules;
import java.time.Clock;
import java.time.Duration;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.function.LongSupplier;

/**
 * The experiment as a discrete-event model on fake time: the same {@link ServerCore} and
 * admission ({@link FifoAdmission}, or server-kit's queue for {@link Arm#serverHalf}) as the real
 * backend, the same fleet of clients each with its own {@link RetryExecutor} (the SDK's, with
 * HTTP's retry rules: the pushback a shed answer carries is obeyed) and its own budget from
 * {@link Arm#clientBudget}, paced by the same {@link Pacer}; only the network (none here) and
 * Redis differ. The fleet budget is one {@link LocalRetryBudget} shared by every client of the
 * arm: the paced rule of {@code budget.lua} over the fleet's counts, without Redis's flush lag.
 * Deterministic for a seed; one run takes well under a second of CPU per arm at 300 clients,
 * whatever the machine's load.
 */
final class ModelRun {
  /** The step at which first attempts are released (the real fleet's ticker). */
  static final long TICK_MILLIS = 5;
  private static final long EPOCH_MILLIS = 1_000_000_000L; // budgets' clocks start far from zero

  /** A response of the model: the status and headers the retry rules read. */
  record ModelResponse(int status, Map<String, String> headers) {
    String header(String name) {
      for (Map.Entry<String, String> h : headers.entrySet()) {
        if (h.getKey().equalsIgnoreCase(name)) {
          return h.getValue();
        }
      }
      return null;
    }
  }

  private static final HttpClientRules<ModelResponse> RULES =
      HttpClientRules.of(ModelResponse.class, ModelResponse::status, r -> r::header, Clock.systemUTC());

  /** What one arm's run produced: the clients' table and the backend's. */
  record Result(Arm arm, PerSecond calls, PerSecond server) {}

  private ModelRun() {}

  /** The call policy of every client: attempts, full jitter, per-attempt timeout T. */
  static RetryPolicy policy(Params p) {
    return RetryPolicy.builder()
        .maxAttempts(p.maxAttempts())
        .backoff(Duration.ofMillis(p.backoffBaseMillis()), Duration.ofMillis(p.backoffCapMillis()))
        .attemptTimeout(p.attemptTimeout())
        .build();
  }

  static Result run(Params p, Scenario scenario, Arm arm, long seed) {
    FakeTime time = new FakeTime();
    long t0 = time.nanos();
    LongSupplier sinceStart = () -> (time.nanos() - t0) / 1_000_000L;
    PerSecond server = new PerSecond(scenario.totalSeconds(), ServerCore.COLUMNS);
    Random random = new Random(seed);
    Admission admission = arm.serverHalf()
        ? ServerKitAdmission.of(p, time::nanos, time, new Random(seed + 1)::nextDouble)
        : new FifoAdmission(p.workers(), p.queueLimit());
    ServerCore core = new ServerCore(admission, new ServerCore.Timers() {
      @Override
      public long nowMillis() {
        return sinceStart.getAsLong();
      }

      @Override
      public void after(long delayMillis, Runnable task) {
        time.schedule(task, delayMillis * 1_000_000L);
      }
    }, 0, m -> scenario.serviceMillis(p.serviceMillis(), m), server);

    CallStats stats = new CallStats(new PerSecond(scenario.totalSeconds(), CallStats.COLUMNS), sinceStart);
    RetryPolicy policy = RULES.apply(policy(p), true);
    LongSupplier budgetClock = () -> EPOCH_MILLIS + sinceStart.getAsLong();
    RetryBudget fleet = arm.fleetBudget() ? new LocalRetryBudget(Arm.fleetConfig("model"), budgetClock) : null;
    RetryExecutor[] clients = new RetryExecutor[p.clients()];
    for (int i = 0; i < clients.length; i++) {
      Arm.ClientBudget cb = arm.clientBudget("model", budgetClock, () -> fleet);
      RetryExecutor.Builder b = RetryExecutor.builder(policy).scheduler(time).nanoClock(time::nanos)
          .random(random::nextDouble).listener(stats.listener()).listener(cb.listener());
      if (cb.budget() != null) {
        b.budget(cb.budget());
      }
      clients[i] = b.build();
    }
    Pacer pacer = new Pacer(scenario, p.firstRate());
    int next = 0;
    long end = scenario.totalSeconds() * 1000L;
    for (long m = 0; m < end; m += TICK_MILLIS) {
      int due = pacer.due(m);
      for (int k = 0; k < due; k++) {
        send(clients[next], core, stats, sinceStart);
        next = (next + 1) % clients.length;
      }
      time.advance(TICK_MILLIS * 1_000_000L);
    }
    return new Result(arm, stats.table(), server);
  }

  private static void send(RetryExecutor client, ServerCore core, CallStats stats, LongSupplier sinceStart) {
    long started = sinceStart.getAsLong();
    client.<ModelResponse>callAsync(ctx -> {
      CompletableFuture<ModelResponse> answer = new CompletableFuture<>();
      long now = sinceStart.getAsLong();
      long deadline = ctx.hasDeadline() ? now + ctx.remainingMillis() : Long.MAX_VALUE;
      core.arrive(new Job(now, deadline, ctx.attempt(),
          (status, headers) -> answer.complete(new ModelResponse(status, headers))));
      return answer;
    }).whenComplete((r, e) -> stats.ended(started, r != null && r.status() == 200));
  }
}
