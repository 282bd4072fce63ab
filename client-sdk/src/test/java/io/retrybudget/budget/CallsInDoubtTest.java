package io.retrybudget.budget;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

import io.retrybudget.budget.redis.protocol.BudgetScripts;
import io.retrybudget.budget.redis.protocol.CountsInDoubt;
import java.util.List;
import org.junit.jupiter.api.Test;

class CallsInDoubtTest {
  private static CallsInDoubt.Held held(long seq, long requests, long since) {
    return new CallsInDoubt.Held(new CountsInDoubt(seq, requests, 0, 0), since);
  }

  private static List<Long> numbers(CallsInDoubt d) {
    return d.counts().stream().map(CountsInDoubt::seq).toList();
  }

  @Test
  void callsOfOneWayAreKeptInNumberOrderAndAnotherWaysGivenUp() {
    CallsInDoubt.Change a = CallsInDoubt.add(null, 1, held(7, 3, 0));
    CallsInDoubt.Change b = CallsInDoubt.add(a.next(), 1, held(5, 4, 10)); // failed after 7, numbered before it
    assertEquals(List.of(5L, 7L), numbers(b.next()), "in number order, as budget.lua takes them");
    assertEquals(0, b.lostRequests());
    assertEquals(7, b.next().requests());
    CallsInDoubt.Change c = CallsInDoubt.add(b.next(), 2, held(9, 1, 20));
    assertEquals(List.of(9L), numbers(c.next()), "one way's at a time");
    assertEquals(2, c.next().way());
    assertEquals(7, c.lostRequests(), "the other way's are given up");
  }

  @Test
  void beyondTheLimitTheOldestSentIsGivenUp() {
    CallsInDoubt d = null;
    for (int i = 1; i <= BudgetScripts.MAX_CARRIED; i++) {
      d = CallsInDoubt.add(d, 0, held(10 + i, i, 100 + i)).next();
    }
    CallsInDoubt.Change full = CallsInDoubt.add(d, 0, held(3, 50, 50)); // numbered lowest, sent first
    assertEquals(BudgetScripts.MAX_CARRIED, full.next().calls().size());
    assertEquals(50, full.lostRequests(), "the one sent longest ago goes");
    assertEquals(11L, numbers(full.next()).get(0));
  }

  @Test
  void answeredCallsAreLetGoOfAndOldOnesExpire() {
    CallsInDoubt d = CallsInDoubt.add(CallsInDoubt.add(null, 0, held(4, 2, 0)).next(), 0, held(6, 3, 30_000)).next();
    assertEquals(List.of(6L), numbers(d.without(List.of(new CountsInDoubt(4, 2, 0, 0)))));
    assertSame(d, d.without(List.of(new CountsInDoubt(5, 1, 0, 0))), "a number not held: nothing changes");
    assertNull(d.without(d.counts()));
    assertSame(d, d.keptAt(CallsInDoubt.KEPT_MILLIS).next());
    CallsInDoubt.Change later = d.keptAt(CallsInDoubt.KEPT_MILLIS + 1);
    assertEquals(List.of(6L), numbers(later.next()));
    assertEquals(2, later.lostRequests());
    assertNull(d.keptAt(30_000 + CallsInDoubt.KEPT_MILLIS + 1).next());
  }
}
