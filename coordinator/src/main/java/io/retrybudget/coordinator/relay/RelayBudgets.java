package io.retrybudget.coordinator.relay;

import io.retrybudget.budget.redis.protocol.BudgetCall;
import io.retrybudget.budget.redis.protocol.BudgetReply;
import io.retrybudget.budget.redis.protocol.BudgetScripts;
import io.retrybudget.budget.redis.protocol.CallExtras;
import io.retrybudget.budget.redis.protocol.RelayTag;
import io.retrybudget.budget.redis.protocol.NumberedCall;
import io.retrybudget.relay.BudgetRelay;
import io.retrybudget.relay.RelaySettings;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.function.DoubleSupplier;
import java.util.function.LongSupplier;

/**
 * The budgets of one relay host, each a {@link BudgetRelay}, all run on one thread (the host's event
 * loop): clients' calls are answered at once from what the relay holds; {@link #tick} sends each
 * budget's call to Redis when one is due (at most one in flight per budget) and its answer comes back
 * through {@code loop}, the same thread. Nothing here blocks: the upstream is a future.
 *
 * <p>A call refused unsent goes back to its relay ({@link BudgetRelay#upstreamRefused}); any other
 * failure (a timeout, a connection lost in flight) leaves its fate unknown: the relay holds it and it
 * goes again with the number it was last sent with ({@link BudgetRelay#upstreamInDoubt},
 * {@link Upstream#again}), so its counts are applied exactly once.
 */
final class RelayBudgets implements RelaySession.Budgets {
  private final Map<String, BudgetRelay> relays = new LinkedHashMap<>();
  private final RelaySettings settings;
  private final int maxBudgets;
  private final LongSupplier clock;
  private final DoubleSupplier random;
  private final Upstream upstream;
  private final Map<String, Long> doubtNumbers = new LinkedHashMap<>(); // budget -> number of its call in doubt
  private final Executor loop;
  private final String id; // the relay's client id at Redis: its tags name it
  private long upstreamCalls;
  private long upstreamFailures;

  /**
   * The relay's calls to Redis, numbered with its own client id (each reply with the host's timeout
   * included: {@code BudgetScripts.numbered} and {@code again}).
   */
  interface Upstream {
    /** Sends {@code call} with a fresh number, saying {@code extras} (the batch it closes, the held items it forwards). */
    Sent send(BudgetCall call, CallExtras extras);

    /** Sends {@code call}, of unknown fate, again with the {@code number} it last went with, saying what it said then. */
    Sent again(BudgetCall call, long number, CallExtras extras);
  }

  /**
   * A call sent: Redis's reply, and the number its last attempt went with (read once the reply is
   * done, when no attempt follows: {@link NumberedCall}).
   */
  record Sent(CompletableFuture<BudgetReply> reply, LongSupplier number) {
    static Sent of(NumberedCall call) {
      return new Sent(call.reply(), call::number);
    }
  }

  /**
   * {@code upstream} sends the relay's budget.lua calls to Redis as {@code id}; {@code loop} runs a task
   * on the thread that runs this object.
   */
  RelayBudgets(RelaySettings settings, int maxBudgets, LongSupplier clock, DoubleSupplier random,
      Upstream upstream, Executor loop, String id) {
    this.id = id;
    new RelayTag(id, 1, 0, false); // a relay's id must be one a held item can name: checked once
    this.settings = settings;
    this.maxBudgets = maxBudgets;
    this.clock = clock;
    this.random = random;
    this.upstream = upstream;
    this.loop = loop;
  }

  @Override
  public BudgetReply call(RelayCall call) {
    return answer(call).reply();
  }

  @Override
  public RelaySession.Answered answer(RelayCall call) {
    String name = call.call().name();
    BudgetRelay relay = relays.get(name);
    if (relay == null) {
      if (relays.size() >= maxBudgets) {
        throw new IllegalStateException("this relay serves at most " + maxBudgets + " budgets");
      }
      relay = new BudgetRelay(name, settings, random);
      relays.put(name, relay);
    }
    long now = clock.getAsLong();
    BudgetRelay.Answer answer = relay.answer(call.clientId(), call.seq(), call.call(), call.carried(), call.held(),
        call.arrival(), now);
    send(relay, now); // the first client's call is due at once: Redis hears of the budget without a tick's wait
    String tag = call.hold() ? RelayTag.wire(id, answer.batch(), answer.settled(), answer.took()) : null;
    return new RelaySession.Answered(answer.reply(), tag);
  }

  /** Sends every budget's call to Redis that is due now. */
  void tick() {
    long now = clock.getAsLong();
    for (BudgetRelay relay : relays.values()) {
      send(relay, now);
    }
  }

  /** Forgets clients quiet for two fleet epochs in every budget. */
  void sweep() {
    long now = clock.getAsLong();
    for (BudgetRelay relay : relays.values()) {
      relay.sweep(now);
    }
  }

  private void send(BudgetRelay relay, long now) {
    BudgetCall up = relay.upstreamCall(now);
    if (up == null) {
      return;
    }
    upstreamCalls++;
    String name = relay.name();
    Sent sent;
    try {
      if (relay.resending()) {
        Long number = doubtNumbers.get(name);
        if (number == null) { // never with a fresh number: that could apply its counts twice
          throw new IllegalStateException("no number kept for " + name + "'s call in doubt");
        }
        sent = upstream.again(up, number, relay.upstreamExtras());
      } else {
        sent = upstream.send(up, relay.upstreamExtras());
      }
    } catch (RuntimeException e) {
      upstreamFailures++;
      relay.upstreamFailed(up, clock.getAsLong()); // not sent, or cannot tell: as a failure (a call in doubt stays so)
      return;
    }
    CompletableFuture<BudgetReply> answer = sent.reply();
    answer.whenComplete((reply, error) -> loop.execute(() -> {
      long t = clock.getAsLong();
      if (error != null) {
        upstreamFailures++;
        if (BudgetScripts.neverRun(error)) {
          relay.upstreamRefused(up, t); // refused unwritten: its counts go with the next call
        } else {
          doubtNumbers.put(name, sent.number().getAsLong()); // no attempt follows a done reply: this is its last number
          relay.upstreamInDoubt(up, t);
        }
      } else {
        relay.upstreamReplied(up, reply, t);
      }
      if (!relay.inDoubt()) {
        doubtNumbers.remove(name);
      }
    }));
  }

  /** The budget's relay, or null when no client has called for it. */
  BudgetRelay relay(String name) {
    return relays.get(name);
  }

  int size() {
    return relays.size();
  }

  long upstreamCalls() {
    return upstreamCalls;
  }

  long upstreamFailures() {
    return upstreamFailures;
  }
}
