package io.retrybudget.budget.redis.protocol;

import java.util.concurrent.atomic.AtomicLong;

/**
 * One client's identity and call numbers for budget.lua's de-duplication: a random id and a strictly
 * increasing sequence. {@link BudgetScripts} numbers and sends a call under this object's lock, so
 * calls reach Redis (one connection, in order) in sequence order, and a call re-sent because it was
 * not applied takes a fresh number: it is never judged stale against its own sequence.
 */
public final class ClientSequence {
  private final String clientId;
  private final AtomicLong last = new AtomicLong();
  private final ConnectionFloor floor = new ConnectionFloor(); // guarded by this

  public ClientSequence(String clientId) {
    if (clientId == null || clientId.isEmpty() || clientId.length() > 64 || clientId.contains(":")) {
      throw new IllegalArgumentException("clientId must be 1..64 characters without ':', was " + clientId);
    }
    this.clientId = clientId;
  }

  public String clientId() {
    return clientId;
  }

  /** The last number handed out. */
  public long last() {
    return last.get();
  }

  /** What this client tells a relay about its connection; only under this object's lock. */
  ConnectionFloor floor() {
    return floor;
  }

  long next() {
    return last.incrementAndGet();
  }
}
