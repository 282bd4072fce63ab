package io.retrybudget.server;

import io.retrybudget.server.servlet.IdempotencyFilter;
import io.retrybudget.testing.RedisExtension;
import jakarta.servlet.DispatcherType;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.EnumSet;
import org.eclipse.jetty.ee11.servlet.FilterHolder;
import org.eclipse.jetty.ee11.servlet.ServletContextHandler;
import org.eclipse.jetty.ee11.servlet.ServletHolder;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The contract on a real embedded Jetty 12.1 (ee11, Servlet 6.1) with {@link IdempotencyFilter}. */
class ServletIdempotencyTest extends IdempotencyContract {
  @RegisterExtension
  static final RedisExtension redis = RedisExtension.standalone();

  private Server server;

  @Override
  protected RedisExtension redis() {
    return redis;
  }

  /** A plain blocking servlet: reads the body the filter cached, writes with getWriter(). */
  static final class PaymentsServlet extends HttpServlet {
    private final transient TestPayments app;

    PaymentsServlet(TestPayments app) {
      this.app = app;
    }

    @Override
    protected void doPost(HttpServletRequest req, HttpServletResponse res) throws IOException {
      String key = req.getHeader("Idempotency-Key");
      String body = new String(req.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      if (app.shouldHold(body)) {
        app.hold(key).join();
      }
      StoredResponse answer = app.answer(key, body, (IdempotencyContext) req.getAttribute(IdempotencyContext.ATTRIBUTE));
      res.setStatus(answer.status());
      for (StoredResponse.Header h : answer.headers()) {
        res.addHeader(h.name(), h.value());
      }
      res.getWriter().write(new String(answer.body(), StandardCharsets.UTF_8));
    }
  }

  @Override
  protected int startServer(IdempotencyGuard payments, IdempotencyGuard waiting, TestPayments app) throws Exception {
    server = new Server();
    ServerConnector connector = new ServerConnector(server);
    connector.setHost("127.0.0.1");
    connector.setPort(0);
    server.addConnector(connector);
    ServletContextHandler context = new ServletContextHandler();
    context.setContextPath("/");
    context.addServlet(new ServletHolder(new PaymentsServlet(app)), "/payments");
    context.addServlet(new ServletHolder(new PaymentsServlet(app)), "/waiting/payments");
    context.addServlet(new ServletHolder(new PaymentsServlet(app)), "/stored/payments");
    context.addFilter(new FilterHolder(new IdempotencyFilter(storeAll, 1024 * 1024)), "/stored/payments",
        EnumSet.of(DispatcherType.REQUEST));
    context.addFilter(new FilterHolder(new IdempotencyFilter(payments, 1024 * 1024)), "/payments",
        EnumSet.of(DispatcherType.REQUEST));
    context.addFilter(new FilterHolder(new IdempotencyFilter(waiting, 1024 * 1024)), "/waiting/payments",
        EnumSet.of(DispatcherType.REQUEST));
    server.setHandler(context);
    server.start();
    return connector.getLocalPort();
  }

  @Override
  protected void stopServer() throws Exception {
    server.stop();
  }
}
