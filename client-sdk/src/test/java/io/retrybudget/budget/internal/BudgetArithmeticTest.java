package io.retrybudget.budget.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.math.BigInteger;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class BudgetArithmeticTest {

  @Test
  void examplesFromTheDesign() {
    // 10% of 20,000 first attempts plus a floor of 10/s over 10 s
    assertEquals(2100, BudgetArithmetic.allowance(100_000, 20_000, 10, 10));
    assertEquals(100, BudgetArithmetic.allowance(100_000, 0, 10, 10));
    assertEquals(0, BudgetArithmetic.allowance(100_000, 9, 0, 10));
    assertEquals(1, BudgetArithmetic.allowance(100_000, 10, 0, 10));
    assertEquals(999_999, BudgetArithmetic.allowance(1_000_000, 999_999, 0, 10));
  }

  @Test
  void admitsWhileRetriesPlusOneFit() {
    assertTrue(BudgetArithmetic.admits(10, 9, 1));
    assertFalse(BudgetArithmetic.admits(10, 10, 1));
    assertTrue(BudgetArithmetic.admits(10, 5, 5));
    assertFalse(BudgetArithmetic.admits(10, 5, 6));
    assertEquals(0, BudgetArithmetic.remaining(10, 12));
    assertEquals(3, BudgetArithmetic.remaining(10, 7));
  }

  @Test
  void exactFloorForAnyCountWithoutOverflow() {
    SplittableRandom random = new SplittableRandom(42);
    for (int i = 0; i < 100_000; i++) {
      long ppm = 1 + random.nextLong(1_000_000);
      long requests = random.nextLong(Long.MAX_VALUE / 1_000_000);
      BigInteger exact = BigInteger.valueOf(ppm).multiply(BigInteger.valueOf(requests))
          .divide(BigInteger.valueOf(1_000_000));
      assertEquals(exact.longValueExact(), BudgetArithmetic.allowance(ppm, requests, 0, 10), ppm + " x " + requests);
    }
  }

  @Test
  void ratioToPpmRounds() {
    assertEquals(100_000, BudgetArithmetic.ratioToPpm(0.1));
    assertEquals(1, BudgetArithmetic.ratioToPpm(0.000001));
    assertEquals(1_000_000, BudgetArithmetic.ratioToPpm(1.0));
    assertEquals(333_333, BudgetArithmetic.ratioToPpm(1.0 / 3));
  }
}
