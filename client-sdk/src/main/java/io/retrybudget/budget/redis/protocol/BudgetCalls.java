package io.retrybudget.budget.redis.protocol;

import io.lettuce.core.RedisException;
import io.lettuce.core.RedisNoScriptException;
import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * The attempts of {@link BudgetScripts}' budget.lua calls: each numbered under its sequence's lock with
 * the floor it tells ({@link ConnectionFloor}), its arguments, and its re-sends (the contract is
 * {@link BudgetScripts}'s: after an empty script cache, a stale answer to a call overtaken on its way,
 * a refusal unsent).
 */
final class BudgetCalls {
  /** Lettuce's first reconnect attempt comes after 10 ms; a refused call is sent again after this. */
  static final long RESEND_AFTER_DISCONNECT_MILLIS = 50;
  /**
   * At most this many re-sends of a refused call: after 50, 100, 200 ms (350 ms in all, so a caller
   * without a deadline of its own, the coordinator, still answers a Redis outage fast), and none
   * once the caller gave up: a refused call was never run, so sending it again cannot count twice.
   */
  static final int RESENDS_AFTER_DISCONNECT = 3;
  private final RedisBudgetStore store;

  BudgetCalls(RedisBudgetStore store) {
    this.store = store;
  }

  /**
   * One attempt: unnumbered ({@code sequence} null), with a fresh number, or with {@code fixed} (&gt; 0,
   * {@link BudgetScripts#again}). With a {@code handle} no attempt goes once the result is done.
   */
  void send(BudgetCall call, List<CountsInDoubt> carried, CallExtras extras, BudgetKeys k, ClientSequence sequence,
      NumberedCall handle, long fixed, boolean resent, int refused, CompletableFuture<BudgetReply> result) {
    String[] keyNames = {k.config(), k.window(), k.clients(), k.index(), k.pace()};
    CompletableFuture<List<Object>> raw;
    long count = -1; // the store's count of connections as the attempt was composed (-1: not known)
    if (sequence == null) {
      raw = run(LuaScript.BUDGET, keyNames, budgetArgs(call, "", 1, extras.options(""), List.of(), extras), resent);
    } else {
      synchronized (sequence) {
        if (handle != null && handle.reply().isDone()) {
          return; // the caller gave up (its timeout completed the reply): no attempt after that
        }
        long n = fixed > 0 ? fixed : sequence.next();
        // the floor on this connection (ConnectionFloor): a relay's rule; budget.lua ignores it, and a
        // client cannot tell a relay from Redis (a relay may stand at Redis's address, as a sidecar)
        count = fixed == 0 ? store.connectionsOpened() : -1;
        ConnectionFloor floor = sequence.floor();
        String mark = fixed > 0 ? "again" : floor.claim(store, count, n);
        boolean judged = count < 1 || floor.runAnswered();
        raw = run(LuaScript.BUDGET, keyNames, budgetArgs(call, sequence.clientId(), n, extras.options(mark), carried,
            extras), resent);
        long on = count;
        if (count > 0 && store.connectionsOpened() != count) {
          // a connection opened while it was sent: it may be the new one's first call, which a relay
          // does not judge; the next call starts a new run
          judged = false;
          floor.forget();
          on = -1; // nor is the connection it went on known
        }
        if (handle != null) {
          handle.sentWith(n, judged, on);
        }
      }
    }
    long sentOn = count;
    raw.whenComplete((list, error) -> {
      if (error == null) {
        BudgetReply reply;
        try {
          if (list != null && list.size() == BudgetReply.RELAY_VALUES + 1 && extras.hold()) {
            // a relay's tag for the counts it took (RelayTag), asked for with "hold"
            RelayTag tag = RelayTag.parse(String.valueOf(list.get(BudgetReply.RELAY_VALUES)));
            reply = BudgetReply.parse(list.subList(0, BudgetReply.RELAY_VALUES));
            if (handle != null) {
              handle.tagged(tag);
            }
          } else {
            reply = BudgetReply.parse(list);
          }
        } catch (RuntimeException e) {
          result.completeExceptionally(e);
          return;
        }
        if (sentOn > 0 && reply.applied() && !sequence.floor().answeredOnce()) {
          synchronized (sequence) {
            sequence.floor().answered(store, sentOn); // the relay holds this client's entry on that connection
          }
        }
        if (!resent && sequence != null && fixed == 0 && BudgetReply.STALE.equals(reply.status())) {
          // not applied: a call overtaken on its way (a redirect); its counts go again, once
          send(call, carried, extras, k, sequence, handle, 0, true, refused, result);
        } else {
          result.complete(reply);
        }
        return;
      }
      Throwable cause = BudgetScripts.unwrap(error);
      if (!resent && cause instanceof RedisNoScriptException) {
        // not applied: the script cache was empty. Again, with the text (caching it) and a new number
        // (the same one for a call sent again with its own)
        send(call, carried, extras, k, sequence, handle, fixed, true, refused, result);
      } else if (refused < RESENDS_AFTER_DISCONNECT && notSent(cause)) {
        // refused before it was written (the node's connection is being re-established, as when a
        // master turns replica in a failover and drops its clients): again once the reconnect had time
        CompletableFuture.delayedExecutor(resendDelayMillis(refused), TimeUnit.MILLISECONDS).execute(() -> {
          if (!result.isDone()) { // not after the caller gave up (its timeout completed the future)
            send(call, carried, extras, k, sequence, handle, fixed, resent, refused + 1, result);
          }
        });
      } else {
        result.completeExceptionally(BudgetScripts.translate(call.name(), cause));
      }
    });
  }

  /** 50, 100, 200 ms: the wait before the re-send after {@code refused} refusals. */
  static long resendDelayMillis(int refused) {
    return RESEND_AFTER_DISCONNECT_MILLIS << refused;
  }

  /**
   * A call that was not run: Lettuce's refusal while its connection is down (REJECT_COMMANDS: never
   * written), or Redis's refusal before running it while a failover moves slots ({@code CLUSTERDOWN},
   * {@code TRYAGAIN}).
   */
  static boolean notSent(Throwable cause) {
    if (!(cause instanceof RedisException) || cause.getMessage() == null) {
      return false;
    }
    String m = cause.getMessage();
    return m.startsWith("Currently not connected") || m.startsWith("CLUSTERDOWN") || m.startsWith("TRYAGAIN");
  }

  private CompletableFuture<List<Object>> run(LuaScript script, String[] keyNames, String[] args, boolean text) {
    return text ? store.eval(script, keyNames, args) : store.evalsha(script, keyNames, args);
  }

  /**
   * budget.lua's ARGV; {@code mark} is ARGV[13]'s options ("again", a relay's connection claim, "hold",
   * "through=k", comma-separated, or empty), then the counts in doubt, then the held items.
   */
  private static String[] budgetArgs(BudgetCall call, String clientId, long seq, String mark,
      List<CountsInDoubt> carried, CallExtras extras) {
    BudgetConfig seed = call.seed();
    String[] args = {
        clientId, Long.toString(seq), Long.toString(call.requests()), Long.toString(call.denied()),
        Long.toString(call.need()), Long.toString(call.want()),
        seed == null ? "" : Long.toString(seed.ratioPpm()),
        seed == null ? "" : Integer.toString(seed.windowSeconds()),
        seed == null ? "" : Integer.toString(seed.minRetriesPerSecond()),
        seed == null ? "" : seed.mode().wireName(),
        seed == null ? "" : Integer.toString(seed.maxCallsPerSecond()),
        call.retries() == 0 ? "" : Long.toString(call.retries())};
    if (mark.isEmpty() && carried.isEmpty() && extras.held().isEmpty()) {
      return args;
    }
    String[] marked = java.util.Arrays.copyOf(args, args.length + 1 + 4 * carried.size() + extras.held().size());
    // "again": applied only while Redis holds the client's last number; a claim: a relay's (ConnectionFloor)
    marked[args.length] = mark;
    int i = args.length + 1;
    for (CountsInDoubt d : carried) {
      // each added only if its call never ran (budget.lua's ARGV[14..])
      marked[i++] = Long.toString(d.seq());
      marked[i++] = Long.toString(d.requests());
      marked[i++] = Long.toString(d.denied());
      marked[i++] = Long.toString(d.retries());
    }
    for (HeldCounts h : extras.held()) {
      marked[i++] = h.arg(); // each added only if its relay never applied its batch
    }
    return marked;
  }
}
