package io.retrybudget.coordinator.relay;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.redis.protocol.BudgetCall;
import io.retrybudget.budget.redis.protocol.BudgetKeys;
import io.retrybudget.budget.redis.protocol.BudgetReply;
import io.retrybudget.budget.redis.protocol.BudgetScripts;
import io.retrybudget.budget.redis.protocol.CallExtras;
import io.retrybudget.budget.redis.protocol.ClientSequence;
import io.retrybudget.budget.redis.protocol.HeldCounts;
import io.retrybudget.budget.redis.protocol.NumberedCall;
import io.retrybudget.budget.redis.protocol.RelayHeld;
import io.retrybudget.budget.redis.protocol.RelayTag;
import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import io.retrybudget.relay.BudgetRelay;
import io.retrybudget.relay.RelaySettings;
import io.retrybudget.relay.ReportLedger;
import io.retrybudget.testing.RedisExtension;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Relays killed with sums they never sent, against a real Redis (budget.lua's held items and credits)
 * with the real relay core ({@link BudgetRelay}, its batches) and the real client side ({@link RelayHeld}),
 * on fake time, Jepsen-style: random schedules of client reports (to their relay, to another, to Redis
 * directly, carrying what {@link RelayHeld} offers), relays' calls to Redis (answered; run but the reply
 * lost, then sent again with their number; refused unsent), relays killed (every count they held is
 * gone with them) and started again under a new id. The history is checked after every step and at the
 * end:
 *
 * <ul>
 *   <li>never counted twice: Redis's first attempts never exceed those made;
 *   <li>none lost: once the clients have called again and the live relays have sent everything, Redis
 *       holds every first attempt made, but those a client gave up ({@link RelayHeld#lostRequests()}).
 * </ul>
 */
class RelayKillScheduleTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();

  private static final int RELAYS = 3;
  private static final int CLIENTS = 5;
  private static final int REDIS = RELAYS; // the way index of Redis directly

  private static final class Relay {
    final BudgetRelay core;
    final ClientSequence identity;
    long doubtNumber;

    Relay(String name, String id) {
      core = new BudgetRelay(name, RelaySettings.defaults(), () -> 0.5);
      identity = new ClientSequence(id);
    }
  }

  private static final class Client {
    final ClientSequence sequence; // its numbers at Redis
    final RelayHeld held;
    long relayNumber; // its numbers at relays
    int home;

    Client(String id, int home) {
      sequence = new ClientSequence(id);
      held = new RelayHeld(id);
      this.home = home;
    }
  }

  private final class Schedule {
    final String name;
    final BudgetConfig seed;
    final BudgetKeys keys;
    final SplittableRandom random;
    final Relay[] relays = new Relay[RELAYS];
    final Client[] clients = new Client[CLIENTS];
    final List<String> history = new ArrayList<>();
    long now = 1_000;
    long made;
    int restarts;

    Schedule(long seedValue) {
      name = "kill-" + seedValue;
      seed = BudgetConfig.builder(name).windowSeconds(3600).build();
      keys = scripts.keys(name);
      random = new SplittableRandom(seedValue);
      for (int r = 0; r < RELAYS; r++) {
        relays[r] = new Relay(name, "relay-" + seedValue + "-" + r);
      }
      for (int c = 0; c < CLIENTS; c++) {
        clients[c] = new Client("c" + seedValue + "x" + c, c % RELAYS);
      }
    }

    void report(Client c, long requests) {
      int way = c.home;
      if (relays[way] == null || random.nextInt(6) == 0) {
        way = random.nextInt(RELAYS + 1); // another relay, or Redis directly
      }
      if (way < RELAYS && relays[way] == null) {
        way = REDIS;
      }
      BudgetCall call = new BudgetCall(name, requests, 0, 0, 0, 0, seed);
      List<HeldCounts> items = c.held.offer(way, now).items();
      made += requests;
      if (way == REDIS) {
        BudgetReply reply = scripts.numbered(call, keys, c.sequence, List.of(), CallExtras.holding(items)).reply()
            .orTimeout(5, TimeUnit.SECONDS).join();
        assertTrue(reply.applied(), reply.toString());
        c.held.applied(way, null, -1, items, call, now);
        history.add(c.sequence.clientId() + " " + requests + " to Redis carrying " + items.size());
        return;
      }
      Relay r = relays[way];
      BudgetRelay.Answer a = r.core.answer(c.sequence.clientId(), ++c.relayNumber, call, List.of(), items,
          ReportLedger.Arrival.on(1), now);
      assertTrue(a.reply().applied(), a.reply().toString());
      c.held.applied(way, new RelayTag(r.identity.clientId(), a.batch(), a.settled(), a.took()), 1, items, call,
          now);
      history.add(c.sequence.clientId() + " " + requests + " to " + r.identity.clientId() + " batch " + a.batch()
          + " settled " + a.settled() + " carrying " + items.size() + (a.took() ? "" : " (not taken)"));
    }

    /** Relay {@code r}'s due call to Redis, answered ({@code fate} 0), run with its reply lost (1) or refused unsent (2). */
    void upstream(int r, int fate) {
      Relay relay = relays[r];
      now = Math.max(now, relay.core.nextUpstreamAt());
      BudgetCall up = relay.core.upstreamCall(now);
      if (up == null) {
        return;
      }
      CallExtras extras = relay.core.upstreamExtras();
      if (fate == 2) {
        relay.core.upstreamRefused(up, now);
        history.add(relay.identity.clientId() + " refused unsent " + up.requests());
        return;
      }
      NumberedCall n = relay.core.resending()
          ? scripts.again(up, keys, relay.identity, relay.doubtNumber, extras)
          : scripts.numbered(up, keys, relay.identity, List.of(), extras);
      BudgetReply reply = n.reply().orTimeout(5, TimeUnit.SECONDS).join();
      if (fate == 1) {
        relay.doubtNumber = n.number();
        relay.core.upstreamInDoubt(up, now);
        history.add(relay.identity.clientId() + " sent " + up.requests() + " through " + extras.through() + " with "
            + extras.held().size() + " items, reply lost (" + reply.status() + ")");
      } else {
        relay.core.upstreamReplied(up, reply, now);
        history.add(relay.identity.clientId() + " sent " + up.requests() + " through " + extras.through() + " with "
            + extras.held().size() + " items: " + reply.status());
      }
    }

    void step() {
      int what = random.nextInt(20);
      now += random.nextInt(50);
      if (what < 9) {
        report(clients[random.nextInt(CLIENTS)], 1 + random.nextInt(5));
      } else if (what < 16) {
        int r = random.nextInt(RELAYS);
        if (relays[r] != null) {
          int f = random.nextInt(10);
          upstream(r, f < 7 ? 0 : f < 9 ? 1 : 2);
        }
      } else if (what < 18) {
        int r = random.nextInt(RELAYS);
        if (relays[r] != null) {
          history.add("killed " + relays[r].identity.clientId() + " holding " + relays[r].core.pendingRequests());
          relays[r] = null;
        }
      } else {
        int r = random.nextInt(RELAYS);
        if (relays[r] == null) {
          relays[r] = new Relay(name, "relay-" + name + "-again" + (++restarts));
          history.add("started " + relays[r].identity.clientId());
        }
      }
      check();
    }

    void check() {
      long inRedis = requests();
      assertTrue(inRedis <= made, "counted twice: Redis " + inRedis + " of " + made + " made; " + history);
    }

    long requests() {
      return scripts.status(name, seed).orTimeout(5, TimeUnit.SECONDS).join().requests();
    }

    /** Every relay alive, every client calling and every relay sending until nothing is held anywhere. */
    void settle() {
      for (int r = 0; r < RELAYS; r++) {
        if (relays[r] == null) {
          relays[r] = new Relay(name, "relay-" + name + "-last" + r);
        }
      }
      for (int round = 0; round < 6; round++) {
        for (Client c : clients) {
          report(c, 0);
        }
        for (int r = 0; r < RELAYS; r++) {
          for (int i = 0; i < 3; i++) {
            now += 600;
            upstream(r, 0);
          }
        }
      }
    }
  }

  private RedisBudgetStore store;
  private BudgetScripts scripts;

  @Test
  void aKilledRelaysSumsReachRedisOnceThroughItsClients() {
    store = RedisBudgetStore.connect(redis.connectionOptions().commandTimeout(Duration.ofSeconds(5)).build());
    try {
      scripts = new BudgetScripts(store);
      long recovered = 0;
      long killedHolding = 0;
      for (long s = 1; s <= 60; s++) {
        Schedule schedule = new Schedule(s);
        for (int i = 0; i < 60; i++) {
          schedule.step();
        }
        killedHolding += schedule.history.stream().filter(h -> h.startsWith("killed") && !h.endsWith(" 0")).count();
        schedule.settle();
        long lost = 0;
        for (Client c : schedule.clients) {
          lost += c.held.lostRequests();
        }
        long inRedis = schedule.requests();
        assertEquals(schedule.made - lost, inRedis, "seed " + s + ": made " + schedule.made + ", given up " + lost
            + ", Redis " + inRedis + "; " + String.join("\n", schedule.history));
        recovered += schedule.made;
      }
      assertTrue(killedHolding >= 20, "the schedules killed relays holding counts: " + killedHolding);
      System.out.println("RelayKillScheduleTest: " + recovered + " first attempts, every one in Redis; "
          + killedHolding + " relays killed holding counts");
    } finally {
      store.close();
    }
  }
}
