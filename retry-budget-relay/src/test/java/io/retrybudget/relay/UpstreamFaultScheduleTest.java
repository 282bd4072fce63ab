package io.retrybudget.relay;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.redis.protocol.BudgetCall;
import io.retrybudget.budget.redis.protocol.BudgetReply;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * A relay's calls to Redis under random fault schedules, Jepsen-style: replies lost after Redis applied
 * the call, calls lost before it, refusals unsent, calls delivered late (after their re-send, after
 * later calls), on fake time, against a model of budget.lua's de-duplication (a call whose number is not
 * above the last applied one is stale). The host is modelled as RelayBudgets is: a fresh number for
 * each call, the same number for a call {@link BudgetRelay#resending}. After every step: nothing applied
 * twice ({@code applied + pending <= received}); after the faults stop and everything in flight lands:
 * every first attempt applied exactly once ({@code applied == received}, none lost).
 */
class UpstreamFaultScheduleTest {
  private static final BudgetConfig SEED = BudgetConfig.builder("b").ratio(0.1).minRetriesPerSecond(10).build();

  /** A call on its way to the model Redis. */
  private record InFlight(BudgetCall call, long number) {}

  /** budget.lua's de-duplication for one client id, and what it applied. */
  private static final class ModelRedis {
    long lastNumber;
    long applied;

    BudgetReply deliver(InFlight m) {
      if (m.number() <= lastNumber) {
        return reply(BudgetReply.STALE);
      }
      lastNumber = m.number();
      applied += m.call().requests();
      return reply(BudgetReply.COUNTED);
    }

    private BudgetReply reply(String status) {
      return new BudgetReply(status, 0, applied, 0, 0, applied / 10 + 100, 3, 100_000, 10, 10, "enforce", 0, 0,
          20_000_000, 2_000);
    }
  }

  @Test
  void everyFirstAttemptIsAppliedExactlyOnceUnderRandomUpstreamFaults() {
    int withDoubt = 0;
    for (long seed = 0; seed < 400; seed++) {
      withDoubt += run(seed) ? 1 : 0;
    }
    assertTrue(withDoubt > 300, "most schedules put calls in doubt: " + withDoubt);
  }

  /** One schedule; true when some call was in doubt. */
  private static boolean run(long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    BudgetRelay relay = new BudgetRelay("b", RelaySettings.defaults(), random::nextDouble);
    ModelRedis redis = new ModelRedis();
    List<InFlight> late = new ArrayList<>(); // calls that timed out on their way and land some time later
    List<String> history = new ArrayList<>();
    long now = 0;
    long received = 0;
    long numbers = 0;
    long doubtNumber = 0;
    boolean sawDoubt = false;
    int steps = 200 + random.nextInt(200);
    for (int step = 0; step < steps + 400; step++) {
      boolean faults = step < steps;
      now += random.nextInt(1, 120);
      if (faults && random.nextInt(3) > 0) {
        long n = random.nextInt(1, 20);
        relay.client("c" + random.nextInt(5), step + 1, new BudgetCall("b", n, 0, 0, 0, 0, SEED), now);
        received += n;
        history.add(now + " client " + n);
      }
      if (!late.isEmpty() && (!faults || random.nextInt(4) == 0)) {
        InFlight m = late.remove(random.nextInt(late.size()));
        history.add(now + " late " + m.number() + " " + redis.deliver(m).status());
      }
      BudgetCall up = relay.upstreamCall(now);
      if (up != null) {
        boolean again = relay.resending();
        long number = again ? doubtNumber : ++numbers;
        InFlight m = new InFlight(up, number);
        int fate = faults ? random.nextInt(6) : 0;
        history.add(now + " send " + number + (again ? " again " : " ") + up.requests() + " fate " + fate);
        switch (fate) {
          case 0, 1 -> relay.upstreamReplied(up, redis.deliver(m), now); // answered
          case 2 -> { // applied, the reply lost: a timeout
            redis.deliver(m);
            doubtNumber = number;
            relay.upstreamInDoubt(up, now);
          }
          case 3 -> { // lost on its way: a timeout
            doubtNumber = number;
            relay.upstreamInDoubt(up, now);
          }
          case 4 -> { // a timeout, and it lands later
            late.add(m);
            doubtNumber = number;
            relay.upstreamInDoubt(up, now);
          }
          default -> relay.upstreamRefused(up, now); // refused unsent
        }
        sawDoubt |= fate >= 2 && fate <= 4;
      }
      long got = received;
      assertTrue(redis.applied + relay.pendingRequests() <= got,
          () -> "seed " + seed + ": counts applied twice: applied " + redis.applied + " pending "
              + relay.pendingRequests() + " received " + got + "\n" + String.join("\n", history));
    }
    assertEquals(0, relay.lostRequests(), "seed " + seed + ": no call was in doubt a minute");
    long got = received;
    assertEquals(got, redis.applied, () -> "seed " + seed + ": every first attempt applied once\n"
        + String.join("\n", history));
    return sawDoubt;
  }
}
