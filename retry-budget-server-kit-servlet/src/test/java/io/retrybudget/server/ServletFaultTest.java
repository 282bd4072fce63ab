package io.retrybudget.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import io.retrybudget.server.servlet.IdempotencyFilter;
import io.retrybudget.testing.Eventually;
import io.retrybudget.testing.RedisExtension;
import jakarta.servlet.DispatcherType;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.EnumSet;
import java.util.UUID;
import org.eclipse.jetty.ee11.servlet.FilterHolder;
import org.eclipse.jetty.ee11.servlet.ServletContextHandler;
import org.eclipse.jetty.ee11.servlet.ServletHolder;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Redis killed under the servlet filter on a real Jetty 12.1: closed by default, open by choice. */
class ServletFaultTest {
  @RegisterExtension
  static final RedisExtension redis = RedisExtension.standalone();

  @Test
  void redisKilledFailsClosedOrOpenAsConfigured() throws Exception {
    TestPayments app = new TestPayments();
    try (RedisBudgetStore connection = RedisBudgetStore.connect(redis.connectionOptions().commandTimeout(Duration.ofMillis(500)).build())) {
      ClaimStore store = new ClaimStore(connection, Duration.ofMillis(300));
      IdempotencyGuard closed = new IdempotencyGuard(store, IdempotencyConfig.builder().build());
      IdempotencyGuard open = new IdempotencyGuard(store, IdempotencyConfig.builder().failOpen(true).build());
      Server server = new Server();
      ServerConnector connector = new ServerConnector(server);
      connector.setHost("127.0.0.1");
      server.addConnector(connector);
      ServletContextHandler context = new ServletContextHandler();
      context.addServlet(new ServletHolder(new ServletIdempotencyTest.PaymentsServlet(app)), "/payments");
      context.addServlet(new ServletHolder(new ServletIdempotencyTest.PaymentsServlet(app)), "/open");
      context.addFilter(new FilterHolder(new IdempotencyFilter(closed, 64 * 1024)), "/payments", EnumSet.of(DispatcherType.REQUEST));
      context.addFilter(new FilterHolder(new IdempotencyFilter(open, 64 * 1024)), "/open", EnumSet.of(DispatcherType.REQUEST));
      server.setHandler(context);
      server.start();
      try {
        HttpTestClient http = new HttpTestClient(connector.getLocalPort());
        assertEquals(201, http.post("/payments", UUID.randomUUID().toString(), "{\"amount\":1}").statusCode());
        redis.server().kill();
        int before = app.total.get();
        HttpResponse<String> r = http.post("/payments", UUID.randomUUID().toString(), "{\"amount\":1}");
        assertEquals(503, r.statusCode());
        assertTrue(r.body().contains("idempotency-store-unavailable"), r.body());
        assertEquals("1000", r.headers().firstValue("X-Retry-Pushback-Ms").orElse(null));
        assertEquals("1", r.headers().firstValue("Retry-After").orElse(null));
        assertEquals(before, app.total.get(), "not run");
        assertEquals(201, http.post("/open", UUID.randomUUID().toString(), "{\"amount\":1}").statusCode(), "fail open runs it");
        assertEquals(before + 1, app.total.get());
        redis.server().restart();
        Eventually.await("the store recovers", Duration.ofSeconds(10),
            () -> http.post("/payments", UUID.randomUUID().toString(), "{\"amount\":1}").statusCode() == 201);
      } finally {
        server.stop();
        closed.close();
        open.close();
      }
    }
  }
}
