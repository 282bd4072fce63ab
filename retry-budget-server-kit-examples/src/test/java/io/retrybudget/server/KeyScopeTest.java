package io.retrybudget.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import io.retrybudget.server.servlet.IdempotencyFilter;
import io.retrybudget.server.vertx.VertxIdempotency;
import io.retrybudget.testing.RedisExtension;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServer;
import io.vertx.ext.auth.User;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.handler.BodyHandler;
import io.vertx.ext.web.handler.SimpleAuthenticationHandler;
import jakarta.servlet.Filter;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletRequestWrapper;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.security.Principal;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * An idempotency key's scope with the default configuration, on Vert.x, Jetty 12.1 and Tomcat 11:
 * callers are kept apart (by principal, else by their credentials), and a key reused on another
 * route or with another method is refused 422 rather than run again.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class KeyScopeTest {
  @RegisterExtension
  static final RedisExtension redis = RedisExtension.standalone();

  private final Map<String, AtomicInteger> executions = new ConcurrentHashMap<>();
  private RedisBudgetStore connection;
  private IdempotencyGuard guard;
  private Vertx vertx;
  private HttpServer vertxServer;
  private ServletServer jetty;
  private ServletServer tomcat;
  private final Map<String, Integer> ports = new ConcurrentHashMap<>();

  @BeforeAll
  void start() throws Exception {
    connection = RedisBudgetStore.connect(redis.connectionOptions().build());
    guard = new IdempotencyGuard(new ClaimStore(connection, Duration.ofSeconds(2)), IdempotencyConfig.builder().build());
    vertx = Vertx.vertx();
    Router router = Router.router(vertx);
    // a principal when the test names one (X-Test-User), as an authentication handler sets it
    router.route().handler(SimpleAuthenticationHandler.create().authenticate(ctx -> {
      String user = ctx.request().getHeader("X-Test-User");
      return Future.succeededFuture(user == null ? null : User.fromName(user));
    }));
    router.route().handler(BodyHandler.create().setBodyLimit(64 * 1024));
    for (String route : List.of("/payments", "/refunds")) {
      router.post(route).handler(VertxIdempotency.handler(guard, ctx -> Future.succeededFuture(
          answer("vertx", ctx.request().method().name(), route, ctx.request().getHeader("Idempotency-Key")))));
    }
    router.patch("/payments").handler(VertxIdempotency.handler(guard, ctx -> Future.succeededFuture(
        answer("vertx", "PATCH", "/payments", ctx.request().getHeader("Idempotency-Key")))));
    vertxServer = vertx.createHttpServer().requestHandler(router).listen(0, "127.0.0.1").await();
    ports.put("vertx", vertxServer.actualPort());
    jetty = servlets(ServletServer.jetty(), "jetty");
    ports.put("jetty", jetty.start());
    tomcat = servlets(ServletServer.tomcat(), "tomcat");
    ports.put("tomcat", tomcat.start());
  }

  private ServletServer servlets(ServletServer server, String name) {
    Filter principal = (req, res, chain) -> {
      String user = ((HttpServletRequest) req).getHeader("X-Test-User");
      chain.doFilter(user == null ? req : new HttpServletRequestWrapper((HttpServletRequest) req) {
        @Override
        public Principal getUserPrincipal() {
          return () -> user;
        }
      }, res);
    };
    for (String route : List.of("/payments", "/refunds")) {
      server.filter(route, principal).filter(route, new IdempotencyFilter(guard, 64 * 1024));
      server.servlet(route, new HttpServlet() {
        @Override
        protected void service(HttpServletRequest req, HttpServletResponse res) throws IOException {
          req.getInputStream().readAllBytes();
          StoredResponse a = answer(name, req.getMethod(), route, req.getHeader("Idempotency-Key"));
          res.setStatus(a.status());
          res.setContentType("application/json");
          res.getOutputStream().write(a.body());
        }
      });
    }
    return server;
  }

  private StoredResponse answer(String adapter, String method, String route, String key) {
    executions.computeIfAbsent(adapter + " " + key, k -> new AtomicInteger()).incrementAndGet();
    String json = "{\"charge_id\":\"" + UUID.randomUUID() + "\",\"route\":\"" + method + " " + route + "\"}";
    return new StoredResponse(201, List.of(new StoredResponse.Header("Content-Type", "application/json")),
        json.getBytes(StandardCharsets.UTF_8));
  }

  @AfterAll
  void stop() throws Exception {
    vertxServer.close().await();
    vertx.close().await();
    jetty.close();
    tomcat.close();
    guard.close();
    connection.close();
  }

  private HttpResponse<String> send(String adapter, String method, String route, String key, Map<String, String> headers) {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + ports.get(adapter) + route))
        .timeout(Duration.ofSeconds(20)).header("Content-Type", "application/json").header("Idempotency-Key", key)
        .method(method, HttpRequest.BodyPublishers.ofString("{\"amount\":42}"));
    headers.forEach(b::header);
    return new HttpTestClient(ports.get(adapter)).send(b.build());
  }

  private int executions(String adapter, String key) {
    AtomicInteger n = executions.get(adapter + " " + key);
    return n == null ? 0 : n.get();
  }

  @ParameterizedTest
  @ValueSource(strings = {"vertx", "jetty", "tomcat"})
  void anotherCallersCredentialsWithTheSameKeyAndBodyExecuteApart(String adapter) {
    String key = UUID.randomUUID().toString();
    HttpResponse<String> alice = send(adapter, "POST", "/payments", key, Map.of("Authorization", "Bearer alice-token"));
    HttpResponse<String> bob = send(adapter, "POST", "/payments", key, Map.of("Authorization", "Bearer bob-token"));
    assertEquals(201, alice.statusCode(), alice.body());
    assertEquals(201, bob.statusCode(), bob.body());
    assertNotEquals(alice.body(), bob.body(), "bob must never get alice's charge replayed");
    assertTrue(bob.headers().firstValue(IdempotencyGuard.REPLAYED_HEADER).isEmpty());
    assertEquals(2, executions(adapter, key));
    HttpResponse<String> aliceAgain = send(adapter, "POST", "/payments", key, Map.of("Authorization", "bearer alice-token"));
    assertEquals(alice.body(), aliceAgain.body(), "the auth scheme is case-insensitive: the same caller");
    assertEquals("true", aliceAgain.headers().firstValue(IdempotencyGuard.REPLAYED_HEADER).orElse(null));
    HttpResponse<String> anonymous = send(adapter, "POST", "/payments", key, Map.of());
    assertNotEquals(alice.body(), anonymous.body(), "no credentials: the anonymous scope, not alice's");
    assertEquals(3, executions(adapter, key));
  }

  @ParameterizedTest
  @ValueSource(strings = {"vertx", "jetty", "tomcat"})
  void thePrincipalScopesTheKeyWhateverTheCredentials(String adapter) {
    String key = UUID.randomUUID().toString();
    HttpResponse<String> carol = send(adapter, "POST", "/payments", key,
        Map.of("X-Test-User", "carol", "Authorization", "Bearer first-session"));
    HttpResponse<String> carolLater = send(adapter, "POST", "/payments", key,
        Map.of("X-Test-User", "carol", "Authorization", "Bearer refreshed-session"));
    HttpResponse<String> dave = send(adapter, "POST", "/payments", key, Map.of("X-Test-User", "dave"));
    assertEquals(carol.body(), carolLater.body(), "one principal, one scope: a refreshed token replays");
    assertNotEquals(carol.body(), dave.body());
    assertEquals(2, executions(adapter, key));
  }

  @ParameterizedTest
  @ValueSource(strings = {"vertx", "jetty", "tomcat"})
  void aKeyReusedOnAnotherRouteOrMethodIs422AndNothingRuns(String adapter) {
    String key = UUID.randomUUID().toString();
    Map<String, String> auth = Map.of("Authorization", "Bearer erin");
    assertEquals(201, send(adapter, "POST", "/payments", key, auth).statusCode());
    HttpResponse<String> otherRoute = send(adapter, "POST", "/refunds", key, auth);
    assertEquals(422, otherRoute.statusCode(), otherRoute.body());
    assertTrue(otherRoute.body().contains("idempotency-key-reused"), otherRoute.body());
    HttpResponse<String> otherMethod = send(adapter, "PATCH", "/payments", key, auth);
    assertEquals(422, otherMethod.statusCode(), otherMethod.body());
    assertEquals(1, executions(adapter, key), "the key's first request ran, and nothing else");
  }
}
