package io.retrybudget.server.example;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.OptionalLong;
import org.junit.jupiter.api.Test;

/** The example's downstream write, fenced with the claim's token. */
class FencedLedgerTest {
  @Test
  void aStaleHolderCannotChargeAfterANewerOne() {
    FencedLedger ledger = new FencedLedger();
    assertTrue(ledger.charge("pay-1", OptionalLong.of(1_000)), "the first holder charges");
    assertTrue(ledger.charge("pay-1", OptionalLong.of(2_000)), "a newer holder (it took the key over) charges");
    assertFalse(ledger.charge("pay-1", OptionalLong.of(1_000)), "the paused first holder, back late, is refused");
    assertTrue(ledger.charge("pay-2", OptionalLong.of(1_000)), "tokens are per payment");
    assertTrue(ledger.charge("pay-3", OptionalLong.empty()), "unguarded requests are not fenced");
    assertEquals(4, ledger.charges());
  }
}
