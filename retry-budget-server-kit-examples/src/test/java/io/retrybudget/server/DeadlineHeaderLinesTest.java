package io.retrybudget.server;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.retrybudget.server.servlet.IdempotencyFilter;
import io.retrybudget.server.vertx.VertxIdempotency;
import io.vertx.core.Vertx;
import io.vertx.ext.web.Router;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.eclipse.jetty.ee11.servlet.ServletContextHandler;
import org.eclipse.jetty.ee11.servlet.ServletHolder;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A request with several {@code X-Request-Deadline-Ms} field lines (a proxy appended one, or an
 * attacker sent two): {@link MiddleLayer#inbound} takes the tightest valid value among the first
 * eight, on a real Vert.x server and a real Jetty 12.1, read through each adapter's view.
 */
class DeadlineHeaderLinesTest {
  private static final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
  private static MiddleLayer middle;
  private static Vertx vertx;
  private static Server jetty;
  private static URI vertxUri;
  private static URI jettyUri;

  @BeforeAll
  static void start() throws Exception {
    middle = MiddleLayer.builder(http).maxInboundDeadline(Duration.ofSeconds(60)).build();
    vertx = Vertx.vertx();
    Router router = Router.router(vertx);
    router.get("/read").handler(ctx -> {
      MiddleLayer.Inbound in = middle.inbound(VertxIdempotency.view(ctx));
      ctx.response().end(Long.toString(in.deadlineMillis()));
    });
    vertxUri = URI.create("http://127.0.0.1:"
        + vertx.createHttpServer().requestHandler(router).listen(0, "127.0.0.1").await().actualPort() + "/read");

    jetty = new Server();
    ServerConnector connector = new ServerConnector(jetty);
    connector.setHost("127.0.0.1");
    connector.setPort(0);
    jetty.addConnector(connector);
    ServletContextHandler context = new ServletContextHandler();
    context.addServlet(new ServletHolder(new HttpServlet() {
      @Override
      protected void doGet(HttpServletRequest req, HttpServletResponse res) throws IOException {
        MiddleLayer.Inbound in = middle.inbound(IdempotencyFilter.view(req, new byte[0]));
        res.getOutputStream().write(Long.toString(in.deadlineMillis()).getBytes(StandardCharsets.UTF_8));
      }
    }), "/read");
    jetty.setHandler(context);
    jetty.start();
    jettyUri = URI.create("http://127.0.0.1:" + connector.getLocalPort() + "/read");
  }

  @AfterAll
  static void stop() throws Exception {
    jetty.stop();
    vertx.close().await();
    middle.close();
  }

  /** The deadline each server read from a request carrying {@code lines}, one field line each. */
  private static List<Long> read(String... lines) throws Exception {
    List<Long> seen = new ArrayList<>();
    for (URI uri : List.of(vertxUri, jettyUri)) {
      HttpRequest.Builder b = HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(20)).GET();
      for (String line : lines) {
        b.header("X-Request-Deadline-Ms", line); // java.net.http sends every value as its own field line
      }
      HttpResponse<String> r = http.send(b.build(), HttpResponse.BodyHandlers.ofString());
      assertEquals(200, r.statusCode(), uri.toString());
      seen.add(Long.parseLong(r.body()));
    }
    return seen;
  }

  @Test
  void theTightestOfSeveralFieldLinesBinds() throws Exception {
    assertEquals(List.of(300L, 300L), read("5000", "300"), "the second, appended line is tighter");
    assertEquals(List.of(300L, 300L), read("300", "5000"));
    assertEquals(List.of(0L, 0L), read("5000", "0"), "a caller who gave up is heard on any line");
  }

  @Test
  void invalidLinesAreSkippedNotTakenAsNoDeadline() throws Exception {
    assertEquals(List.of(250L, 250L), read("abc", "250"));
    assertEquals(List.of(250L, 250L), read("250", "-5", "1.5", "0x10"));
    assertEquals(List.of(-1L, -1L), read("abc", "-1", "1.5"), "no valid value: no deadline");
    assertEquals(List.of(60_000L, 60_000L), read("99999999999999999999999", "70000"), "each capped, then the tightest");
  }

  @Test
  void aCommaListIsTheSameAsItsLines() throws Exception {
    // RFC 9110 5.3: an intermediary may combine the lines into one; the deadline must not change
    assertEquals(List.of(10L, 10L), read("10, 20"));
    assertEquals(List.of(10L, 10L), read("20,, 10 ,"));
    assertEquals(List.of(7L, 7L), read("abc, 7", "9"));
  }

  @Test
  void onlyTheLastEightValuesAreLookedAt() throws Exception {
    String[] nine = {"1", "900", "800", "700", "600", "500", "400", "300", "200"};
    assertEquals(List.of(200L, 200L), read(nine), "the first of nine lines is not read");
    assertEquals(List.of(200L, 200L), read("1, 900, 800, 700", "600, 500, 400, 300, 200"), "nor the first of nine values");
  }

  @Test
  void aSendersPaddingCannotPushOutTheValueAProxyAppended() throws Exception {
    // review3: with the first 8 read, eight garbage values (or eight loose ones) before a proxy's
    // line hid it: no deadline, or the sender's 50 s
    assertEquals(List.of(100L, 100L), read("x,x,x,x,x,x,x,x", "100"));
    assertEquals(List.of(100L, 100L), read("50000,50000,50000,50000,50000,50000,50000,50000", "100"));
    String[] many = new String[20];
    java.util.Arrays.fill(many, "x");
    many[19] = "100";
    assertEquals(List.of(100L, 100L), read(many), "twenty lines, the proxy's last");
  }
}
