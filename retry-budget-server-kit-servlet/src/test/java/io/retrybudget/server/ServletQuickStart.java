package io.retrybudget.server;

import com.netflix.concurrency.limits.limit.FixedLimit;
import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import io.retrybudget.budget.redis.transport.RedisConnectionOptions;
import io.retrybudget.server.servlet.AdmissionFilter;
import io.retrybudget.server.servlet.IdempotencyFilter;
import jakarta.servlet.DispatcherType;
import jakarta.servlet.http.HttpServlet;
import java.time.Duration;
import java.util.EnumSet;
import org.eclipse.jetty.ee11.servlet.FilterHolder;
import org.eclipse.jetty.ee11.servlet.ServletContextHandler;
import org.eclipse.jetty.ee11.servlet.ServletHolder;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;

/**
 * The module README's example, compiled with the tests and run by {@link ServletQuickStartTest}
 * against a real Redis on a real Jetty 12.1 (ee11): the README shows the lines between the
 * markers, and the test fails when they differ.
 */
final class ServletQuickStart {
  private ServletQuickStart() {}

  /** What the example started, closed by the test. */
  record Running(RedisBudgetStore redis, IdempotencyGuard guard, Server server, int port) implements AutoCloseable {
    @Override
    public void close() throws Exception {
      server.stop();
      guard.close();
      redis.close();
    }
  }

  static Running start(String redisUrl, HttpServlet payments) throws Exception {
    // README:begin
    RedisBudgetStore redis = RedisBudgetStore.connect(RedisConnectionOptions.standalone(redisUrl).build());
    IdempotencyGuard guard = new IdempotencyGuard(new ClaimStore(redis, Duration.ofSeconds(2)), // bounds every Redis call
        IdempotencyConfig.builder().handlerTimeout(Duration.ofSeconds(10)).build());
    RetryAwareAdmission admission = RetryAwareAdmission.builder().limit(FixedLimit.of(64)).build();

    ServletContextHandler context = new ServletContextHandler();               // Jetty 12.1 ee11 (Tomcat 11 alike)
    EnumSet<DispatcherType> request = EnumSet.of(DispatcherType.REQUEST);
    context.addFilter(new FilterHolder(new AdmissionFilter(admission)), "/payments", request);          // first
    context.addFilter(new FilterHolder(new IdempotencyFilter(guard, 64 * 1024)), "/payments", request); // once per key
    context.addServlet(new ServletHolder(payments), "/payments");              // the servlet writes as usual
    // README:end
    Server server = new Server();
    ServerConnector connector = new ServerConnector(server);
    connector.setHost("127.0.0.1");
    server.addConnector(connector);
    server.setHandler(context);
    server.start();
    return new Running(redis, guard, server, connector.getLocalPort());
  }
}
