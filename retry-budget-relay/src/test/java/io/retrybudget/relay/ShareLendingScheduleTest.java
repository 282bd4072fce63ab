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
 * Several relays of one budget lending from their parts of one paced balance ({@link ShareLending}),
 * under random schedules, Jepsen-style: quiet spells (a lone retry now and then) and storms (every
 * relay's clients asking), replies lost after Redis applied the call, calls lost before it, calls
 * landing late, refusals unsent (never so many in a row that a relay is cut off: its own paced share
 * has its tests); on fake time, against a model of budget.lua's balance (refilled at a fixed rate up
 * to a cap of half a second of it; reported retries paid as far as it holds; a draw granted from what
 * is left; a call whose number is not above the last applied one is stale). A history is recorded;
 * after every step:
 *
 * <ul>
 *   <li>what relays lent and the balance could not pay (another relay's draw took their part before
 *       their report came: the only grants beyond the paced rule) is at most one cap in any second:
 *       the burst at most doubled, never the rate;
 *   <li>no lent grant is reported twice: Redis's retries reported are at most those lent;
 * </ul>
 * and, once the faults stop and everything lands, every grant lent is reported exactly once.
 */
class ShareLendingScheduleTest {
  private static final BudgetConfig SEED = BudgetConfig.builder("b").ratio(0.1).minRetriesPerSecond(10).build();
  private static final long RATE = 40; // permits a second
  private static final long CAP = RATE / 2;

  private record InFlight(int relay, BudgetCall call, long number) {}

  /** budget.lua's balance, and each relay's de-duplication by number. */
  private static final class ModelRedis {
    final long[] lastNumber;
    final int callers;
    double balance = CAP;
    long at;
    long reported; // retries reported by relays and applied
    long unpaid; // of them, what the balance could not pay
    long drawn;

    ModelRedis(int relays) {
      lastNumber = new long[relays];
      callers = relays;
    }

    BudgetReply deliver(InFlight m, long now) {
      BudgetCall c = m.call();
      if (m.number() <= lastNumber[m.relay()]) {
        return reply(BudgetReply.STALE, 0);
      }
      lastNumber[m.relay()] = m.number();
      balance = Math.min(CAP, balance + RATE * (now - at) / 1000.0);
      at = now;
      reported += c.retries();
      double paid = Math.min(Math.max(0, balance), c.retries());
      unpaid += c.retries() - (long) Math.ceil(paid - 1e-9);
      balance -= paid;
      if (c.need() == 0) {
        return reply(BudgetReply.COUNTED, 0);
      }
      long available = (long) Math.floor(balance);
      if (available < c.need()) {
        return reply(BudgetReply.DENIED, 0);
      }
      long granted = Math.min(c.want(), available);
      balance -= granted;
      drawn += granted;
      return reply(BudgetReply.GRANTED, granted);
    }

    private BudgetReply reply(String status, long granted) {
      return new BudgetReply(status, granted, 1_000, 0, 0, 200, callers, 100_000, 10, 10, "enforce",
          (long) Math.floor(Math.max(0, balance)), 0, RATE * 1_000_000, 2_000);
    }
  }

  @Test
  void relaysLendFromTheirPartsBeyondTheBalanceByAtMostOneBurstAndReportEveryLendOnce() {
    long worst = 0;
    long lentInAll = 0;
    long unpaidInAll = 0;
    for (long seed = 0; seed < 300; seed++) {
      long[] r = run(seed);
      worst = Math.max(worst, r[0]);
      lentInAll += r[1];
      unpaidInAll += r[2];
    }
    assertTrue(lentInAll > 10_000, "the schedules lent: " + lentInAll);
    System.out.printf("lent %d, unpaid %d, most unpaid in a second %d (cap %d)%n", lentInAll, unpaidInAll, worst, CAP);
  }

  /** One schedule: the most lent and unpaid in a second, the grants lent, those unpaid. */
  private static long[] run(long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    int n = random.nextInt(2, 6);
    BudgetRelay[] relays = new BudgetRelay[n];
    long[] numbers = new long[n];
    long[] doubtNumber = new long[n];
    int[] failedInARow = new int[n];
    for (int i = 0; i < n; i++) {
      relays[i] = new BudgetRelay("b", RelaySettings.builder().failuresToCutOff(10).build(), random::nextDouble);
    }
    ModelRedis redis = new ModelRedis(n);
    List<InFlight> late = new ArrayList<>();
    List<String> history = new ArrayList<>();
    List<long[]> unpaidAt = new ArrayList<>(); // {time, unpaid so far}
    long now = 0;
    long seq = 0;
    long worst = 0;
    boolean storm = false;
    long phaseEnds = 0;
    int steps = 1_500 + random.nextInt(1_500);
    for (int step = 0; step < steps + 2_000; step++) {
      boolean faults = step < steps;
      now += random.nextInt(1, 30);
      if (now >= phaseEnds) {
        storm = faults && random.nextInt(3) == 0;
        phaseEnds = now + random.nextInt(500, 5_000);
        history.add(now + (storm ? " storm" : " quiet"));
      }
      int asks = storm ? random.nextInt(0, 15) : random.nextInt(40) == 0 ? 1 : 0;
      for (int a = 0; a < asks; a++) {
        int i = random.nextInt(n);
        long want = random.nextInt(5) == 0 ? random.nextInt(2, 6) : 1;
        BudgetReply reply = relays[i].client("c" + random.nextInt(50), ++seq,
            new BudgetCall("b", random.nextInt(3), 0, 0, 1, want, SEED), now);
        if (reply.granted() > 0) {
          history.add(now + " relay " + i + " granted " + reply.granted() + " held " + relays[i].held(now));
        }
      }
      if (random.nextInt(3) == 0) { // first attempts: calls to send, and a window to pace by
        relays[random.nextInt(n)].client("c" + random.nextInt(50), ++seq, new BudgetCall("b", 5, 0, 0, 0, 0, SEED), now);
      }
      if (!late.isEmpty() && (!faults || random.nextInt(4) == 0)) {
        InFlight m = late.remove(random.nextInt(late.size()));
        history.add(now + " late relay " + m.relay() + " " + m.number() + " " + redis.deliver(m, now).status());
      }
      for (int i = 0; i < n; i++) {
        BudgetCall up = relays[i].upstreamCall(now);
        if (up == null) {
          continue;
        }
        boolean again = relays[i].resending();
        long number = again ? doubtNumber[i] : ++numbers[i];
        InFlight m = new InFlight(i, up, number);
        int fate = faults && failedInARow[i] < 9 ? random.nextInt(8) : 0;
        failedInARow[i] = fate >= 2 && fate <= 5 ? failedInARow[i] + 1 : 0;
        history.add(now + " relay " + i + " sends " + number + (again ? " again" : "") + " retries " + up.retries()
            + " want " + up.want() + " fate " + fate + " balance " + redis.balance);
        switch (fate) {
          case 2 -> { // applied, the reply lost
            redis.deliver(m, now);
            doubtNumber[i] = number;
            relays[i].upstreamInDoubt(up, now);
          }
          case 3 -> { // lost on its way
            doubtNumber[i] = number;
            relays[i].upstreamInDoubt(up, now);
          }
          case 4 -> { // a timeout, and it lands later
            late.add(m);
            doubtNumber[i] = number;
            relays[i].upstreamInDoubt(up, now);
          }
          case 5 -> relays[i].upstreamRefused(up, now);
          default -> relays[i].upstreamReplied(up, redis.deliver(m, now), now);
        }
      }
      unpaidAt.add(new long[] {now, redis.unpaid});
      int from = unpaidAt.size() - 1;
      while (from > 0 && unpaidAt.get(from - 1)[0] >= now - 1_000) {
        from--;
      }
      long inSecond = redis.unpaid - (from == 0 ? 0 : unpaidAt.get(from - 1)[1]);
      worst = Math.max(worst, inSecond);
      assertTrue(inSecond <= CAP, () -> "seed " + seed + ": " + inSecond + " lent and unpaid in the second to "
          + redis.unpaid + ", cap " + CAP + "\n" + tail(history));
      long lent = lent(relays);
      assertTrue(redis.reported <= lent, () -> "seed " + seed + ": " + redis.reported + " reported, " + lent
          + " lent\n" + tail(history));
      assertEquals(0, alone(relays), "seed " + seed + ": no relay cut off");
    }
    // the end: no more asks; what is in flight lands, and every relay's calls go until nothing waits
    for (InFlight m : late) {
      redis.deliver(m, now);
    }
    for (int k = 0; k < 20; k++) {
      now += 600;
      for (int i = 0; i < n; i++) {
        BudgetCall up = relays[i].upstreamCall(now);
        if (up != null) {
          long number = relays[i].resending() ? doubtNumber[i] : ++numbers[i];
          relays[i].upstreamReplied(up, redis.deliver(new InFlight(i, up, number), now), now);
        }
      }
    }
    long lent = lent(relays);
    for (BudgetRelay relay : relays) {
      assertEquals(0, relay.lostRequests(), "seed " + seed + ": no call was in doubt a minute");
    }
    assertEquals(lent, redis.reported, () -> "seed " + seed + ": every grant lent reported once\n" + tail(history));
    return new long[] {worst, lent, redis.unpaid};
  }

  private static long lent(BudgetRelay[] relays) {
    long sum = 0;
    for (BudgetRelay r : relays) {
      sum += r.lent();
    }
    return sum;
  }

  private static long alone(BudgetRelay[] relays) {
    long sum = 0;
    for (BudgetRelay r : relays) {
      sum += r.grantedAlone();
    }
    return sum;
  }

  private static String tail(List<String> history) {
    return String.join("\n", history.subList(Math.max(0, history.size() - 60), history.size()));
  }
}
