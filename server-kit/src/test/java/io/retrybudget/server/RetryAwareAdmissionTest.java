package io.retrybudget.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.netflix.concurrency.limits.limit.FixedLimit;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * Shedding that prefers first attempts: the partitions and the answers (a real overloaded Vert.x
 * server: {@code VertxAdmissionTest} in retry-budget-server-kit-vertx).
 */
class RetryAwareAdmissionTest {
  @Test
  void atTheLimitRetriesAreShedWhileFirstAttemptsKeepTheirShare() {
    RetryAwareAdmission admission = RetryAwareAdmission.builder().limit(FixedLimit.of(10)).retryShare(0.1)
        .retryHeadroom(0).build();
    List<RetryAwareAdmission.Permit> held = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      held.add(admission.tryAcquire(2).orElseThrow()); // below the limit anyone is admitted
      held.add(admission.tryAcquire(1).orElseThrow());
    }
    assertTrue(admission.tryAcquire(3).isEmpty(), "at the limit a retry over its 10 % share is shed");
    Optional<RetryAwareAdmission.Permit> first = admission.tryAcquire(1);
    assertTrue(first.isPresent(), "a first attempt within its 90 % share is admitted");
    held.add(first.get());
    for (int i = 0; i < 3; i++) {
      held.add(admission.tryAcquire(1).orElseThrow());
    }
    assertTrue(admission.tryAcquire(1).isEmpty(), "first attempts at 9 of 10: their share is full too");
    held.forEach(RetryAwareAdmission.Permit::onSuccess);
    assertTrue(admission.tryAcquire(2).isPresent(), "released permits make room again");
    RetryAwareAdmission.Stats s = admission.stats();
    assertEquals(1, s.shedRetry());
    assertEquals(1, s.shedFirst());
  }

  @Test
  void retriesNeverTakeTheHeadroomKeptForFirstAttempts() {
    RetryAwareAdmission admission = RetryAwareAdmission.builder().limit(FixedLimit.of(10)).build();
    List<RetryAwareAdmission.Permit> held = new ArrayList<>();
    for (int i = 0; i < 8; i++) {
      held.add(admission.tryAcquire(2).orElseThrow());
    }
    assertEquals(8, admission.inflight());
    assertTrue(admission.tryAcquire(2).isEmpty(), "retries stop at 80 % of the limit");
    held.add(admission.tryAcquire(1).orElseThrow());
    held.add(admission.tryAcquire(1).orElseThrow());
    held.remove(0).onSuccess();
    held.remove(0).onIgnore();
    assertTrue(admission.tryAcquire(2).isEmpty(), "still 8 in flight");
    held.add(admission.tryAcquire(1).orElseThrow());
    held.forEach(RetryAwareAdmission.Permit::onSuccess);
    assertEquals(0, admission.inflight());
  }

  @Test
  void aReplicaFullAsksForAWaitTheWholeServiceOverloadedForNoRetry() {
    RetryAwareAdmission replica = RetryAwareAdmission.builder().limit(FixedLimit.of(1)).build();
    StoredResponse wait = replica.shedAnswer();
    assertEquals(503, wait.status());
    assertEquals("500", wait.header("X-Retry-Pushback-Ms"));
    assertEquals("1", wait.header("Retry-After"));
    assertTrue(new String(wait.body()).contains("replica-overloaded"));

    RetryAwareAdmission fleet = RetryAwareAdmission.builder().limit(FixedLimit.of(1)).serviceOverload(() -> true).build();
    StoredResponse stop = fleet.shedAnswer();
    assertEquals(503, stop.status());
    assertEquals("-1", stop.header("X-Retry-Pushback-Ms"));
    assertEquals("30", stop.header("Retry-After"));
    assertTrue(new String(stop.body()).contains("service-overloaded"));
    assertEquals(1, fleet.stats().shedDoNotRetry());
  }

  @Test
  void attemptNumbersAreReadSafely() {
    assertEquals(1, RetryAwareAdmission.attemptOf(null));
    assertEquals(1, RetryAwareAdmission.attemptOf("x"));
    assertEquals(1, RetryAwareAdmission.attemptOf("-4"));
    assertEquals(3, RetryAwareAdmission.attemptOf(" 3 "));
  }
}
