package io.retrybudget.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import io.retrybudget.server.servlet.IdempotencyFilter;
import io.retrybudget.server.vertx.VertxIdempotency;
import io.retrybudget.testing.RedisExtension;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.ext.web.Router;
import jakarta.servlet.DispatcherType;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.EnumSet;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.eclipse.jetty.ee11.servlet.FilterHolder;
import org.eclipse.jetty.ee11.servlet.ServletContextHandler;
import org.eclipse.jetty.ee11.servlet.ServletHolder;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** What the adapters do at their edges: unguarded methods on a filtered path, a route without a BodyHandler. */
class AdapterBoundaryTest {
  @RegisterExtension
  static final RedisExtension redis = RedisExtension.standalone();

  static RedisBudgetStore connection;
  static IdempotencyGuard guard;

  @BeforeAll
  static void connect() {
    connection = RedisBudgetStore.connect(redis.connectionOptions().build());
    guard = new IdempotencyGuard(new ClaimStore(connection, Duration.ofSeconds(2)), IdempotencyConfig.builder().build());
  }

  @AfterAll
  static void close() {
    guard.close();
    connection.close();
  }

  /** A servlet on /files/* that counts the bytes it reads, behind the filter with a 1 KiB body limit. */
  private static Server filesServer() throws Exception {
    Server server = new Server();
    ServerConnector connector = new ServerConnector(server);
    connector.setHost("127.0.0.1");
    connector.setPort(0);
    server.addConnector(connector);
    ServletContextHandler context = new ServletContextHandler();
    context.setContextPath("/");
    context.addServlet(new ServletHolder(new HttpServlet() {
      @Override
      protected void service(HttpServletRequest req, HttpServletResponse res) throws IOException {
        long n = req.getInputStream().readAllBytes().length;
        res.setStatus(200);
        res.getWriter().write(req.getMethod() + " " + n);
      }
    }), "/files/*");
    context.addFilter(new FilterHolder(new IdempotencyFilter(guard, 1024)), "/files/*", EnumSet.of(DispatcherType.REQUEST));
    server.setHandler(context);
    server.start();
    return server;
  }

  @Test
  void anUnguardedMethodPassesThroughTheServletFilterWithItsBodyUnread() throws Exception {
    Server server = filesServer();
    try {
      int port = ((ServerConnector) server.getConnectors()[0]).getLocalPort();
      HttpTestClient http = new HttpTestClient(port);
      HttpResponse<String> put = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/files/a"))
          .PUT(HttpRequest.BodyPublishers.ofByteArray(new byte[100_000])).build());
      assertEquals(200, put.statusCode(), "an unguarded PUT was buffered and refused: " + put.body());
      assertEquals("PUT 100000", put.body(), "the servlet reads the whole body itself");
      // a guarded POST on the same path is still bounded
      HttpResponse<String> post = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/files/a"))
          .header("Idempotency-Key", UUID.randomUUID().toString())
          .POST(HttpRequest.BodyPublishers.ofByteArray(new byte[100_000])).build());
      assertEquals(413, post.statusCode());
      assertTrue(post.body().contains("urn:retrybudget:problem:request-too-large"), post.body());
    } finally {
      server.stop();
    }
  }

  @Test
  void vertxWithoutABodyHandlerRefusesToGuardInsteadOfFingerprintingWithoutTheBody() throws Exception {
    Vertx vertx = Vertx.vertx();
    try {
      AtomicInteger executions = new AtomicInteger();
      Router router = Router.router(vertx);
      router.post("/payments").handler(VertxIdempotency.handler(guard, ctx -> {
        executions.incrementAndGet();
        return Future.succeededFuture(new StoredResponse(201, List.of(), "charged".getBytes(StandardCharsets.UTF_8)));
      }));
      int port = vertx.createHttpServer().requestHandler(router).listen(0, "127.0.0.1").await().actualPort();
      HttpTestClient http = new HttpTestClient(port);
      String key = UUID.randomUUID().toString();
      HttpResponse<String> first = http.post("/payments", key, "{\"amount\": 1}");
      assertEquals(500, first.statusCode());
      assertTrue(first.body().contains("urn:retrybudget:problem:body-handler-missing"), first.body());
      HttpResponse<String> other = http.post("/payments", key, "{\"amount\": 1000000}");
      assertEquals(500, other.statusCode(), "another body under the same key is never answered with a replay");
      assertEquals(0, executions.get(), "nothing ran unguarded");
    } finally {
      vertx.close().await();
    }
  }

  @Test
  void twoIdempotencyKeyFieldLinesAreRefusedOnBothAdapters() throws Exception {
    Server server = filesServer();
    Vertx vertx = Vertx.vertx();
    try {
      Router router = Router.router(vertx);
      router.route().handler(io.vertx.ext.web.handler.BodyHandler.create());
      router.post("/payments").handler(VertxIdempotency.handler(guard, ctx -> Future.succeededFuture(
          new StoredResponse(201, List.of(), "charged".getBytes(StandardCharsets.UTF_8)))));
      int vertxPort = vertx.createHttpServer().requestHandler(router).listen(0, "127.0.0.1").await().actualPort();
      int jettyPort = ((ServerConnector) server.getConnectors()[0]).getLocalPort();
      for (String target : List.of("http://127.0.0.1:" + vertxPort + "/payments", "http://127.0.0.1:" + jettyPort + "/files/a")) {
        HttpResponse<String> r = new HttpTestClient(vertxPort).send(HttpRequest.newBuilder(URI.create(target))
            .header("Idempotency-Key", "x1-" + UUID.randomUUID()).header("Idempotency-Key", "x2-" + UUID.randomUUID())
            .POST(HttpRequest.BodyPublishers.ofString("{}")).build());
        assertEquals(400, r.statusCode(), target + ": " + r.body());
        assertTrue(r.body().contains("urn:retrybudget:problem:idempotency-key-invalid"), r.body());
      }
    } finally {
      server.stop();
      vertx.close().await();
    }
  }
}
