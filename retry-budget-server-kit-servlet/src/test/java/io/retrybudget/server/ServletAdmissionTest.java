package io.retrybudget.server;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.netflix.concurrency.limits.limit.FixedLimit;
import io.retrybudget.server.servlet.AdmissionFilter;
import io.retrybudget.testing.Eventually;
import jakarta.servlet.DispatcherType;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.EnumSet;
import java.util.concurrent.CompletableFuture;
import org.eclipse.jetty.ee11.servlet.FilterHolder;
import org.eclipse.jetty.ee11.servlet.ServletContextHandler;
import org.eclipse.jetty.ee11.servlet.ServletHolder;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.junit.jupiter.api.Test;

/** {@link AdmissionFilter} on a real embedded Jetty 12.1 (ee11). */
class ServletAdmissionTest {
  @Test
  void retriesAreShedFirstWithPushback() throws Exception {
    CompletableFuture<Void> gate = new CompletableFuture<>();
    RetryAwareAdmission admission = RetryAwareAdmission.builder().limit(FixedLimit.of(2)).build();
    Server server = new Server();
    ServerConnector connector = new ServerConnector(server);
    connector.setHost("127.0.0.1");
    server.addConnector(connector);
    ServletContextHandler context = new ServletContextHandler();
    context.addServlet(new ServletHolder(new HttpServlet() {
      @Override
      protected void doGet(HttpServletRequest req, HttpServletResponse res) throws IOException {
        if (req.getParameter("hold") != null) {
          gate.join();
        }
        res.getWriter().write("ok");
      }
    }), "/work");
    context.addFilter(new FilterHolder(new AdmissionFilter(admission)), "/work", EnumSet.of(DispatcherType.REQUEST));
    server.setHandler(context);
    server.start();
    try {
      HttpTestClient http = new HttpTestClient(connector.getLocalPort());
      String base = "http://127.0.0.1:" + connector.getLocalPort() + "/work";
      java.util.function.BiFunction<Integer, Boolean, HttpRequest> get = (attempt, hold) ->
          HttpRequest.newBuilder(URI.create(base + (hold ? "?hold=1" : ""))).header("X-Retry-Attempt", attempt.toString()).build();
      CompletableFuture<HttpResponse<String>> first = CompletableFuture.supplyAsync(() -> http.send(get.apply(1, true)));
      Eventually.await("one request in flight", Duration.ofSeconds(5), () -> admission.inflight() == 1);
      HttpResponse<String> retry = http.send(get.apply(2, false));
      assertEquals(503, retry.statusCode(), "a retry is shed at 80 % of the limit (1 of 2)");
      assertEquals("500", retry.headers().firstValue("X-Retry-Pushback-Ms").orElse(null));
      assertEquals("1", retry.headers().firstValue("Retry-After").orElse(null));
      CompletableFuture<HttpResponse<String>> second = CompletableFuture.supplyAsync(() -> http.send(get.apply(1, true)));
      Eventually.await("two in flight", Duration.ofSeconds(5), () -> admission.inflight() == 2);
      assertEquals(503, http.send(get.apply(1, false)).statusCode(), "at the limit first attempts are shed too");
      gate.complete(null);
      assertEquals(200, first.join().statusCode());
      assertEquals(200, second.join().statusCode());
      assertEquals(200, http.send(get.apply(2, false)).statusCode(), "an idle server takes retries");
      assertEquals(0, admission.inflight());
    } finally {
      server.stop();
    }
  }
}
