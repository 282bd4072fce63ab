package io.retrybudget.coordinator;

import io.retrybudget.coordinator.status.StatusPage;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.testing.RedisExtension;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The status page's HTTP: what it sends, its headers, HEAD, 304, 405 and bad paths. In a browser: StatusPageBrowserTest. */
class StatusPageTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();
  static Coordinator coordinator;
  static final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

  @BeforeAll
  static void start() throws Exception {
    coordinator = Coordinator.start(CoordinatorConfig.fromEnvironment(Map.of(
        "REDIS_URL", redis.uri(), "COORDINATOR_PORT", "0", "COORDINATOR_TOKEN", "page-test-token")));
  }

  @AfterAll
  static void stop() {
    coordinator.close();
  }

  static HttpResponse<String> send(String method, String path, String... headers) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + coordinator.port() + path))
        .timeout(Duration.ofSeconds(10)).method(method, HttpRequest.BodyPublishers.noBody());
    if (headers.length > 0) {
      b.headers(headers);
    }
    return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  static String header(HttpResponse<?> r, String name) {
    return r.headers().firstValue(name).orElse(null);
  }

  @ParameterizedTest
  @CsvSource({
      "/, text/html; charset=utf-8, <script src=\"/status/page.js\"",
      "/?exhausted=true, text/html; charset=utf-8, id=\"only-exhausted\"",
      "/budgets/payments-api, text/html; charset=utf-8, id=\"detail-view\"",
      "/status/page.js, text/javascript; charset=utf-8, textContent",
      "/status/chart.js, text/javascript; charset=utf-8, RetryBudgetChart",
      "/status/page.css, text/css; charset=utf-8, .badge.exhausted",
      "/status/icon.svg, image/svg+xml, <svg"})
  void servesThePageAndItsFilesWithTheirHeaders(String path, String type, String excerpt) throws Exception {
    var r = send("GET", path);
    assertEquals(200, r.statusCode(), path);
    assertEquals(type, header(r, "Content-Type"), path);
    assertTrue(r.body().contains(excerpt), path + " holds " + excerpt);
    assertEquals(StatusPage.CSP, header(r, "Content-Security-Policy"), path);
    assertTrue(StatusPage.CSP.contains("script-src 'self'") && !StatusPage.CSP.contains("unsafe"), "no inline script, no eval");
    assertEquals("nosniff", header(r, "X-Content-Type-Options"));
    assertEquals("no-cache", header(r, "Cache-Control"), "revalidated every time: never an old script with a new page");
    String etag = header(r, "ETag");
    assertTrue(etag != null && etag.matches("\"[0-9a-f]{24}\""), etag);

    var again = send("GET", path, "If-None-Match", "W/\"other\", " + etag);
    assertEquals(304, again.statusCode(), path);
    assertEquals("", again.body());
    assertEquals(etag, header(again, "ETag"));
    assertEquals(200, send("GET", path, "If-None-Match", "\"other\"").statusCode());

    var head = send("HEAD", path);
    assertEquals(200, head.statusCode(), path);
    assertEquals("", head.body(), "HEAD: headers only");
    assertEquals(type, header(head, "Content-Type"));
    assertEquals(Integer.toString(r.body().getBytes(java.nio.charset.StandardCharsets.UTF_8).length),
        header(head, "Content-Length"), "HEAD tells the length GET sends");
  }

  @Test
  void badPathsAndMethodsAreRefused() throws Exception {
    var badName = send("GET", "/budgets/%3Cscript%3E");
    assertEquals(400, badName.statusCode());
    assertTrue(badName.body().contains("\"field\":\"name\""), badName.body());
    assertEquals("application/problem+json", header(badName, "Content-Type"));
    assertEquals(404, send("GET", "/status/secret.txt").statusCode());
    assertEquals(404, send("GET", "/status/index.html").statusCode(), "only the files listed, never a lookup by name");
    var unknownQuery = send("GET", "/?limit=5");
    assertEquals(400, unknownQuery.statusCode());
    var post = send("POST", "/");
    assertEquals(405, post.statusCode());
    assertEquals("GET, HEAD, OPTIONS", header(post, "Allow"));
    assertEquals(204, send("OPTIONS", "/budgets/x").statusCode());
  }

  /** A name in Redis's index that no budget may have (written by hand, or by a bug) does not take the listing down. */
  @Test
  void aHostileNameInTheIndexIsListedAsBrokenNotA503() throws Exception {
    redis.flushAll();
    String hostile = "<img src=x onerror=alert(1)>";
    redis.server().call("ZADD", io.retrybudget.budget.redis.protocol.BudgetKeys.STANDALONE_INDEX, "99999999999999", hostile);
    var r = send("GET", "/v1/budgets");
    assertEquals(200, r.statusCode(), r.body());
    var body = new io.vertx.core.json.JsonObject(r.body());
    assertEquals(0, body.getJsonArray("budgets").size());
    var broken = body.getJsonArray("broken").getJsonObject(0);
    assertEquals(hostile, broken.getString("name"));
    assertEquals("member", broken.getString("field"));
  }

  /** Data reaches the page as text only; the CSP forbids inline script and style, so the markup has none. */
  @Test
  void pageWritesDataAsTextOnly() throws Exception {
    Path dir = Path.of("src/main/resources/status");
    for (String file : new String[] {"page.js", "chart.js"}) {
      String js = Files.readString(dir.resolve(file));
      for (String banned : new String[] {"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(",
          "new Function", "setAttribute('style'", "http://", "https://"}) {
        assertFalse(js.replace("'http://www.w3.org/2000/svg'", "").contains(banned), file + " uses " + banned);
      }
    }
    String html = Files.readString(dir.resolve("index.html"));
    assertFalse(Pattern.compile("<script(?![^>]*\\bsrc=)").matcher(html).find(), "no inline script");
    assertFalse(Pattern.compile("\\sstyle=|\\son[a-z]+=").matcher(html).find(), "no inline style or handler");
    assertFalse(html.contains("//") && Pattern.compile("(src|href)=\"(https?:)?//").matcher(html).find(), "nothing from another origin");
  }
}
