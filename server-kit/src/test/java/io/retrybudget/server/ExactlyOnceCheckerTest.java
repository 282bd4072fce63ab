package io.retrybudget.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.server.ExactlyOnceSchedule.Behaviour;
import io.retrybudget.server.ExactlyOnceSchedule.Exec;
import io.retrybudget.server.ExactlyOnceSchedule.History;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The exactly-once promises of the Idempotency-Key store, checked Jepsen-style over 10,000 seeded
 * random schedules ({@link ExactlyOnceSchedule}) on fake time, independently of the guard's code:
 * <ul>
 *   <li>no two executions of a key run at once, unless a precondition was broken (Redis paused,
 *       killed or flushed, or a handler ran beyond {@code maxHold}) and the earlier holder was told
 *       (its claim reported lost or its write failed);</li>
 *   <li>a key executes again after an earlier execution only when that one's answer was released
 *       as the policy says (STANDARD: a 5xx or a failure; never a 2xx, 403, or anything under
 *       STORE_ALL), not stored for a Redis fault, or stored and then lost with Redis's data;</li>
 *   <li>every replay equals the stored answer, and so does the executing client's own answer;</li>
 *   <li>no claim blocks its key longer than one lease after its holder ended; every claim's
 *       lifecycle ends and leaves no timer behind.</li>
 * </ul>
 * Deliberately broken stores ({@link ClaimModel.Flaw}) show that each check can fail.
 */
class ExactlyOnceCheckerTest {
  static final int SCHEDULES = 10_000;

  static final class Summary {
    int schedules;
    long answers;
    long replays;
    long executions;
    long effects;
    long applied;
    int maxEffectsPerKey;
    int maxEffectsPerKeyWithoutFaults;
    int maxEffectsPerKeyStoreAllWithoutFaults;
    long excused;
    long timeouts;
    long lateStored;
    long claimsLost;
    long ledgerRefused;
    final List<String> violations = new ArrayList<>();

    @Override
    public String toString() {
      return schedules + " schedules, " + answers + " answers (" + replays + " replays), " + executions + " executions, "
          + effects + " side effects (" + applied + " taken by the fenced ledger, " + ledgerRefused + " refused as stale), "
          + "most side effects for one key " + maxEffectsPerKey + " (" + maxEffectsPerKeyWithoutFaults
          + " in schedules without a Redis fault or a handler past maxHold, " + maxEffectsPerKeyStoreAllWithoutFaults
          + " of those under STORE_ALL), " + timeouts + " handler timeouts, "
          + lateStored + " late answers stored, " + claimsLost + " claims reported lost, " + excused
          + " extra executions excused by a broken precondition, " + violations.size() + " violations";
    }
  }

  @Test
  void tenThousandRandomSchedulesKeepEveryPromise() {
    Summary s = new Summary();
    for (long seed = 0; seed < SCHEDULES; seed++) {
      judge(seed, new ExactlyOnceSchedule(seed, ClaimModel.Flaw.NONE).run(), s);
    }
    System.out.println("ExactlyOnceCheckerTest: " + s);
    assertEquals(List.of(), s.violations.subList(0, Math.min(10, s.violations.size())), s.toString());
    // the schedules did reach the cases the promises are about
    assertEquals(1, s.maxEffectsPerKeyStoreAllWithoutFaults, "STORE_ALL with Redis healthy: once per key; " + s);
    assertTrue(s.timeouts > 1_000 && s.lateStored > 100 && s.claimsLost > 10 && s.excused > 10 && s.replays > 10_000
        && s.ledgerRefused > 0, s.toString());
  }

  @ParameterizedTest
  @EnumSource(value = ClaimModel.Flaw.class, names = "NONE", mode = EnumSource.Mode.EXCLUDE)
  void aBrokenStoreIsCaught(ClaimModel.Flaw flaw) {
    Summary s = new Summary();
    for (long seed = 0; seed < 2_000 && s.violations.isEmpty(); seed++) {
      judge(seed, new ExactlyOnceSchedule(seed, flaw).run(), s);
    }
    assertTrue(!s.violations.isEmpty(), flaw + " went unnoticed: " + s);
    System.out.println("ExactlyOnceCheckerTest " + flaw + " caught after " + s.schedules + " schedules: " + s.violations.get(0));
  }

  static void judge(long seed, History h, Summary s) {
    s.schedules++;
    String at = "seed " + seed + ": ";
    h.violations.forEach(v -> s.violations.add(at + v));
    Map<String, List<Exec>> byKey = new LinkedHashMap<>();
    for (Exec x : h.execs) {
      s.executions++;
      s.claimsLost += x.execution.run().lost() ? 1 : 0;
      if (x.clientGot == null && x.execution.run().ending() == ClaimLifecycle.Ending.STORED
          && x.behaviour != Behaviour.THROWN_BEFORE) {
        s.lateStored++;
      }
      if (x.effect) {
        byKey.computeIfAbsent(x.key, k -> new ArrayList<>()).add(x);
        s.effects++;
        s.applied += x.effectApplied ? 1 : 0;
      }
    }
    s.ledgerRefused += h.ledgerRefused;
    boolean faultFree = !h.outage && h.dataLossAtMs.isEmpty();
    for (var e : byKey.entrySet()) {
      List<Exec> effects = e.getValue();
      effects.sort(Comparator.comparingLong((Exec x) -> x.startMs).thenComparingLong(Exec::fence));
      s.maxEffectsPerKey = Math.max(s.maxEffectsPerKey, effects.size());
      if (faultFree && effects.stream().allMatch(x -> x.durationMs < ExactlyOnceSchedule.MAX_HOLD.toMillis())) {
        s.maxEffectsPerKeyWithoutFaults = Math.max(s.maxEffectsPerKeyWithoutFaults, effects.size());
        if (h.storeAll) {
          s.maxEffectsPerKeyStoreAllWithoutFaults = Math.max(s.maxEffectsPerKeyStoreAllWithoutFaults, effects.size());
        }
      }
      for (int i = 1; i < effects.size(); i++) {
        String v = extraExecution(h, effects.get(i - 1), effects.get(i));
        if (v == null) {
          continue;
        }
        if (v.isEmpty()) {
          s.excused++;
        } else {
          s.violations.add(at + e.getKey() + ": " + v);
        }
      }
    }
    checkAnswers(h, s, at);
  }

  /** Null when B's execution after A's is what the policy wants, "" when excused, else the violation. */
  private static String extraExecution(History h, Exec a, Exec b) {
    ClaimLifecycle.Ending ending = a.execution.run().ending();
    boolean saidSo = a.execution.run().lost() || ending == ClaimLifecycle.Ending.LOST
        || ending == ClaimLifecycle.Ending.WRITE_FAILED;
    // a broken precondition counts only between A's claim and B's: Redis's data lost, or Redis out
    // of reach (for its renewals or its write), or A running past maxHold
    boolean dataLost = h.dataLossAtMs.stream().anyMatch(t -> t >= a.startMs - 5 && t <= b.startMs);
    long lease = ExactlyOnceSchedule.LEASE_MS;
    boolean unreachable = h.outages.stream().anyMatch(o -> o[1] >= a.startMs - lease && o[0] <= b.startMs);
    boolean precondition = unreachable || dataLost || a.durationMs >= ExactlyOnceSchedule.MAX_HOLD.toMillis();
    if (a.endMs < 0 || b.startMs < a.endMs) {
      return saidSo && precondition ? "" : "two executions at once (" + a.behaviour + " from " + a.startMs + " to "
          + a.endMs + " ms, ended " + ending + ", lost " + a.execution.run().lost() + "; another from " + b.startMs + " ms)";
    }
    if (ending == ClaimLifecycle.Ending.RELEASED) {
      boolean policyReleases = !h.storeAll
          && (a.behaviour == Behaviour.STATUS_500 || a.behaviour == Behaviour.FAILED_AFTER_EFFECT);
      return policyReleases ? null : "an answer the policy stores (" + a.behaviour + ", STORE_ALL " + h.storeAll
          + ") was released, and the key executed again at " + b.startMs + " ms";
    }
    if (ending == ClaimLifecycle.Ending.STORED) {
      return dataLost ? "" : "executed again at " + b.startMs + " ms after its answer was stored at " + a.endMs + " ms";
    }
    return precondition ? "" : "the answer was not stored (" + ending + ") with Redis healthy; executed again at " + b.startMs;
  }

  private static void checkAnswers(History h, Summary s, String at) {
    for (ExactlyOnceSchedule.Answer a : h.answers) {
      s.answers++;
      if (a.response() == null) {
        continue;
      }
      if (a.response().status() == 503 && a.response().body().length > 0
          && new String(a.response().body()).contains("handler-timeout")) {
        s.timeouts++;
      }
      List<StoredResponse> stored = h.stored.getOrDefault(ClaimStore.idempotencyKey("", a.key()), List.of());
      boolean replay = "true".equals(a.response().header(IdempotencyGuard.REPLAYED_HEADER));
      boolean fromStored = a.from() != null && a.response() == a.from().clientGot
          && a.from().execution.run().ending() == ClaimLifecycle.Ending.STORED;
      if (!replay && !fromStored) {
        continue;
      }
      s.replays += replay ? 1 : 0;
      // with Redis's data intact a key has one stored answer, the first; after a loss, any stored one
      List<StoredResponse> allowed = h.dataLossAtMs.isEmpty() && !stored.isEmpty() ? stored.subList(0, 1) : stored;
      if (allowed.stream().noneMatch(r -> ExactlyOnceSchedule.sameAnswer(r, a.response()))) {
        s.violations.add(at + a.key() + ": " + (replay ? "a replay" : "the executing client's answer") + " at " + a.atMs()
            + " ms (" + a.response().status() + " " + new String(a.response().body()) + ") is not the stored answer "
            + (stored.isEmpty() ? "(none stored)" : stored.get(0).status() + " " + new String(stored.get(0).body())));
      }
    }
  }
}
