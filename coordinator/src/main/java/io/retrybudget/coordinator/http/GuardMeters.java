package io.retrybudget.coordinator.http;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The connection guard's meters, tagged with its listener: the open connections (a gauge) and the
 * connections it closed to protect itself, by {@link CloseReason}.
 */
final class GuardMeters {
  private final Map<CloseReason, Counter> closed = new EnumMap<>(CloseReason.class);

  /**
   * @param open the open connections, held by the caller (the gauge reads it)
   * @param listener {@code api} or {@code management}
   */
  GuardMeters(MeterRegistry registry, String listener, AtomicInteger open) {
    Gauge.builder("retry.budget.http.connections", open, AtomicInteger::get).tag("listener", listener)
        .description("Open HTTP connections (at most COORDINATOR_MAX_CONNECTIONS on the API listener, "
            + "COORDINATOR_MANAGEMENT_MAX_CONNECTIONS on the management listener)").register(registry);
    for (CloseReason r : CloseReason.values()) {
      closed.put(r, Counter.builder("retry.budget.http.connections.closed").tag("reason", r.tag())
          .tag("listener", listener)
          .description("HTTP connections the coordinator closed to protect itself, by reason").register(registry));
    }
  }

  void closed(CloseReason reason) {
    closed.get(reason).increment();
  }
}
