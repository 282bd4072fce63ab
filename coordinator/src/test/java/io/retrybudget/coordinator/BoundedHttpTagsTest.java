package io.retrybudget.coordinator;

import io.retrybudget.coordinator.http.BoundedHttpTags;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The second wall: whatever reaches Vert.x's HTTP metrics, their tags stay in bounded sets. */
class BoundedHttpTagsTest {

  @Test
  void methodsRoutesAndCodesOutsideTheirSetsBecomeOther() {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    BoundedHttpTags tags = new BoundedHttpTags();
    tags.routes(Set.of("/v1/budgets/:name"));
    registry.config().meterFilter(tags);
    for (int i = 0; i < 1_000; i++) {
      Counter.builder("vertx.http.server.requests").tag("method", "M" + i).tag("route", "/v1/budgets/x" + i)
          .tag("code", "9" + i).tag("path", "/raw/" + i).register(registry).increment();
    }
    assertEquals(1, registry.find("vertx.http.server.requests").counters().size(), "1,000 distinct values, one series");
    Counter c = registry.find("vertx.http.server.requests").counter();
    assertEquals("OTHER", c.getId().getTag("method"));
    assertEquals("OTHER", c.getId().getTag("route"));
    assertEquals("OTHER", c.getId().getTag("code"));
    assertEquals("OTHER", c.getId().getTag("path"));
    assertEquals(1_000, c.count());
  }

  @Test
  void knownValuesAndOtherMetersAreLeftAlone() {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    BoundedHttpTags tags = new BoundedHttpTags();
    tags.routes(Set.of("/v1/budgets/:name"));
    registry.config().meterFilter(tags);
    Counter known = Counter.builder("vertx.http.server.requests").tag("method", "PUT").tag("route", "/v1/budgets/:name")
        .tag("code", "200").register(registry);
    assertEquals("PUT", known.getId().getTag("method"));
    assertEquals("/v1/budgets/:name", known.getId().getTag("route"));
    assertEquals("200", known.getId().getTag("code"));
    Counter none = Counter.builder("vertx.http.server.requests").tag("method", "GET").tag("route", "").tag("code", "404")
        .register(registry);
    assertEquals("", none.getId().getTag("route"), "no route matched: empty, bounded");
    Counter other = Counter.builder("retry.budget.x").tag("method", "M1").register(registry);
    assertEquals("M1", other.getId().getTag("method"), "only vertx.http.* meters are touched");
  }
}
