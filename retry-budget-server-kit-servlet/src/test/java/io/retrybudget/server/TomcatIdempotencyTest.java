package io.retrybudget.server;

import io.retrybudget.server.servlet.IdempotencyFilter;
import io.retrybudget.testing.RedisExtension;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The contract on a real embedded Tomcat 11 (Servlet 6.1) with {@link IdempotencyFilter}. */
class TomcatIdempotencyTest extends IdempotencyContract {
  @RegisterExtension
  static final RedisExtension redis = RedisExtension.standalone();

  private ServletServer server;

  @Override
  protected RedisExtension redis() {
    return redis;
  }

  @Override
  protected int startServer(IdempotencyGuard payments, IdempotencyGuard waiting, TestPayments app) throws Exception {
    server = ServletServer.tomcat()
        .servlet("/payments", new ServletIdempotencyTest.PaymentsServlet(app))
        .servlet("/waiting/payments", new ServletIdempotencyTest.PaymentsServlet(app))
        .servlet("/stored/payments", new ServletIdempotencyTest.PaymentsServlet(app))
        .filter("/stored/payments", new IdempotencyFilter(storeAll, 1024 * 1024))
        .filter("/payments", new IdempotencyFilter(payments, 1024 * 1024))
        .filter("/waiting/payments", new IdempotencyFilter(waiting, 1024 * 1024));
    return server.start();
  }

  @Override
  protected void stopServer() throws Exception {
    server.close();
  }
}
