package io.retrybudget.relay;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

class PermitPoolTest {
  @Test
  void permitsAreHandedOutAllOrNoneForTheNeedUpToTheWant() {
    PermitPool p = new PermitPool();
    p.add(5, 0, 1_000);
    assertEquals(3, p.take(1, 3, 10));
    assertEquals(0, p.take(3, 3, 10), "2 held, 3 needed: none");
    assertEquals(2, p.held(10));
    assertEquals(2, p.take(1, 64, 10), "a lease takes what is held");
    assertEquals(0, p.take(1, 1, 10));
    assertEquals(0, p.dropped());
  }

  @Test
  void oldPermitsAreDroppedOldestFirst() {
    PermitPool p = new PermitPool();
    p.add(3, 0, 1_000);
    p.add(4, 500, 1_000);
    assertEquals(2, p.take(1, 2, 600), "from the older draw");
    assertEquals(5, p.held(999));
    assertEquals(4, p.held(1_000), "the older draw's last permit is gone at its end");
    assertEquals(1, p.dropped());
    assertEquals(0, p.held(1_500));
    assertEquals(5, p.dropped());
    p.add(2, 2_000, 100);
    p.clear();
    assertEquals(7, p.dropped());
    assertEquals(0, p.held(2_000));
  }

  @Test
  void wrongArgumentsAreRefused() {
    PermitPool p = new PermitPool();
    assertThrows(IllegalArgumentException.class, () -> p.add(-1, 0, 10));
    assertThrows(IllegalArgumentException.class, () -> p.add(1, 0, 0));
    assertThrows(IllegalArgumentException.class, () -> p.take(0, 1, 0));
    assertThrows(IllegalArgumentException.class, () -> p.take(2, 1, 0));
    p.add(0, 0, 10);
    assertEquals(0, p.held(0));
  }
}
