package io.retrybudget.relay;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class RelaySettingsTest {
  @Test
  void defaults() {
    RelaySettings s = RelaySettings.defaults();
    assertEquals(100_000, s.clientCallsPerSecond());
    assertEquals(100, s.minUpstreamMillis());
    assertEquals(500, s.maxUpstreamMillis());
    assertEquals(0.5, s.upstreamShare());
    assertEquals(1_000, s.permitLifeMillis());
    assertEquals(2, s.failuresToCutOff());
    assertEquals(100_000, s.maxClients());
  }

  @Test
  void everyWrongValueIsNamed() {
    assertNamed("clientCallsPerSecond", () -> RelaySettings.builder().clientCallsPerSecond(9));
    assertNamed("minUpstreamMillis", () -> RelaySettings.builder().upstreamMillis(9, 100));
    assertNamed("maxUpstreamMillis", () -> RelaySettings.builder().upstreamMillis(100, 99));
    assertNamed("maxUpstreamMillis", () -> RelaySettings.builder().upstreamMillis(100, 1_001));
    assertNamed("upstreamShare", () -> RelaySettings.builder().upstreamShare(0));
    assertNamed("upstreamShare", () -> RelaySettings.builder().upstreamShare(Double.NaN));
    assertNamed("permitLifeMillis", () -> RelaySettings.builder().permitLifeMillis(99));
    assertNamed("failuresToCutOff", () -> RelaySettings.builder().failuresToCutOff(0));
    assertNamed("maxClients", () -> RelaySettings.builder().maxClients(99));
    assertNamed("maxClients", () -> RelaySettings.builder().maxClients(10_000_001));
    assertNamed("upstreamShare", () -> new RelaySettings(100_000, 100, 500, 2.0, 1_000, 2, 100_000));
    assertNamed("maxClients", () -> new RelaySettings(100_000, 100, 500, 0.5, 1_000, 2, 0));
  }

  private static void assertNamed(String field, Runnable set) {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, set::run);
    assertTrue(e.getMessage().startsWith(field + " "), e.getMessage());
  }
}
