package io.retrybudget.coordinator;

import io.retrybudget.coordinator.http.RequestRefusals;
import io.retrybudget.coordinator.api.OncePerMinute;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.handler.codec.http2.DefaultHttp2Headers;
import io.netty.handler.codec.http2.DefaultHttp2HeadersEncoder;
import io.netty.handler.codec.http2.Http2Headers;
import io.retrybudget.testing.RedisExtension;
import io.vertx.core.json.JsonObject;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * HTTP by the book and bounded metrics, over raw sockets against the real server and a real Redis:
 * what a careless or hostile client sends, byte for byte.
 */
class HttpHardeningTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();
  static final String TOKEN = "hardening-token";
  static Coordinator coordinator;
  static int port;

  @BeforeAll
  static void start() throws Exception {
    coordinator = Coordinator.start(CoordinatorConfig.fromEnvironment(Map.of(
        "REDIS_URL", redis.uri(), "COORDINATOR_PORT", "0", "COORDINATOR_TOKEN", TOKEN,
        "COORDINATOR_METRICS_CACHE_MS", "0")));
    port = coordinator.port();
  }

  @AfterAll
  static void stop() {
    coordinator.close();
  }

  @BeforeEach
  void clean() {
    redis.flushAll();
  }

  private static String request(String method, String path, String... headers) {
    return requestWithBody(method, path, null, headers);
  }

  private static String requestWithBody(String method, String path, String body, String... headers) {
    StringBuilder b = new StringBuilder(method).append(' ').append(path).append(" HTTP/1.1\r\nHost: t\r\n");
    for (String h : headers) {
      b.append(h).append("\r\n");
    }
    if (body != null) {
      b.append("Content-Length: ").append(body.getBytes(StandardCharsets.UTF_8).length).append("\r\n");
    }
    return b.append("\r\n").append(body == null ? "" : body).toString();
  }

  private static String put(String name, String json, String... headers) {
    return requestWithBody("PUT", "/v1/budgets/" + name, json, headers);
  }

  @Test
  void methodNotAllowedCarriesAllowAndOptionsAnswersIt() throws Exception {
    try (RawHttp c = new RawHttp(port)) {
      RawHttp.Answer patch = c.send(request("PATCH", "/v1/budgets/x")).read();
      assertEquals(405, patch.status());
      assertEquals("GET, HEAD, OPTIONS, PUT, DELETE", patch.header("allow"));
      assertEquals("method", new JsonObject(patch.body()).getString("field"));
      RawHttp.Answer options = c.send(request("OPTIONS", "/v1/budgets/x/retries")).read();
      assertEquals(204, options.status());
      assertEquals("POST, OPTIONS", options.header("allow"));
      RawHttp.Answer post = c.send(request("POST", "/health/live")).read();
      assertEquals(405, post.status());
      assertEquals("GET, HEAD, OPTIONS", post.header("allow"));
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"/v1/budgets", "/v1/budgets/x", "/metrics", "/health/live", "/health/ready", "/openapi.yaml"})
  void headWhereverGet(String path) throws Exception {
    try (RawHttp c = new RawHttp(port)) {
      RawHttp.Answer head = c.send(request("HEAD", path)).readHeadOnly();
      RawHttp.Answer get = c.send(request("GET", path)).read();
      assertEquals(get.status(), head.status(), path);
      assertEquals(get.header("content-type"), head.header("content-type"), path);
      assertTrue(head.header("content-length") != null, path + ": HEAD says how long the GET's body is");
      if (path.equals("/metrics")) {
        // rendered anew here (COORDINATOR_METRICS_CACHE_MS=0): the exact length is MetricsScrapeTest's
        assertTrue(Integer.parseInt(head.header("content-length")) > 1_000, path);
      } else {
        assertEquals(Integer.toString(get.body().getBytes(StandardCharsets.UTF_8).length), head.header("content-length"), path);
      }
      assertTrue(c.send(request("OPTIONS", path)).read().header("allow").startsWith("GET, HEAD, OPTIONS"), path);
    }
  }

  /** RFC 9112 section 3.2: exactly one Host on HTTP/1.1 (at most one on 1.0), and a host[:port] in it. */
  @ParameterizedTest
  @ValueSource(strings = {"GET /health/live HTTP/1.1\r\n\r\n",
      "GET /health/live HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
      "GET /health/live HTTP/1.1\r\nHost: a\r\nhost: a\r\n\r\n",
      "GET /health/live HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n",
      "GET /health/live HTTP/1.1\r\nHost: a/b\r\n\r\n",
      "GET /health/live HTTP/1.1\r\nHost: a@b\r\n\r\n"})
  void aMissingDuplicateOrMalformedHostIs400(String request) throws Exception {
    try (RawHttp c = new RawHttp(port)) {
      RawHttp.Answer r = c.send(request).read();
      assertEquals(400, r.status(), request);
      assertEquals("header", new JsonObject(r.body()).getString("field"));
      assertEquals("close", r.header("connection"));
      c.timeout(2_000);
      assertTrue(c.closedByServer());
    }
    try (RawHttp c = new RawHttp(port)) {
      assertEquals(200, c.send("GET /health/live HTTP/1.0\r\n\r\n").read().status(), "HTTP/1.0 needs no Host");
    }
    try (RawHttp c = new RawHttp(port)) {
      assertEquals(200, c.send("GET /health/live HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n").read().status());
    }
  }

  @Test
  void optionsAsteriskAnswersForTheWholeServer() throws Exception {
    try (RawHttp c = new RawHttp(port)) {
      RawHttp.Answer r = c.send("OPTIONS * HTTP/1.1\r\nHost: t\r\n\r\n").read();
      assertEquals(204, r.status());
      assertEquals(RequestRefusals.SERVER_METHODS, r.header("allow"));
      assertEquals(200, c.send(request("GET", "/health/live")).read().status(), "kept alive");
      RawHttp.Answer get = c.send("GET * HTTP/1.1\r\nHost: t\r\n\r\n").read();
      assertEquals(400, get.status(), "* is for OPTIONS only");
      assertEquals("path", new JsonObject(get.body()).getString("field"));
    }
  }

  /** Review finding 6: RFC 9110 section 15.6.6, in HTTP/1.1 with the JSON error, then close. */
  @ParameterizedTest
  @ValueSource(strings = {"HTTP/9.9", "HTTP/0.9", "HTTP/1.2", "HTTP/2.0", "HTTP/1.10", "http/1.1", "Http/1.0"})
  void anUnsupportedHttpVersionIs505ThenClose(String version) throws Exception {
    try (RawHttp c = new RawHttp(port)) {
      c.send("GET /health/live " + version + "\r\nHost: t\r\n\r\n" + request("GET", "/health/live"));
      RawHttp.Answer a = c.read();
      assertEquals(505, a.status(), version);
      assertTrue(c.lastStatusLine.startsWith("HTTP/1.1 505 "), c.lastStatusLine);
      assertEquals("close", a.header("connection"));
      assertEquals("version", new JsonObject(a.body()).getString("field"));
      assertTrue(new JsonObject(a.body()).getString("error").contains("use HTTP/1.1"), a.body());
      // a version in the wrong case is not told "HTTP/1.1 is not supported; use HTTP/1.1" (review3)
      boolean wrongCase = version.equalsIgnoreCase("HTTP/1.1") || version.equalsIgnoreCase("HTTP/1.0");
      assertEquals(wrongCase, new JsonObject(a.body()).getString("error").contains("case-sensitive"), a.body());
      c.timeout(3_000);
      assertEquals(-1, c.readByte(), "the pipelined request behind it is not answered: the connection ends");
    }
  }

  /** Review finding 8: two Authorization headers, in either order, are 400; neither decides. */
  @Test
  void twoAuthorizationHeadersAre400() throws Exception {
    for (String[] pair : new String[][] {{"Bearer " + TOKEN, "Bearer wrong"}, {"Bearer wrong", "Bearer " + TOKEN}}) {
      try (RawHttp c = new RawHttp(port)) {
        RawHttp.Answer a = c.send(put("two", "{\"ratio\": 0.2}", "Authorization: " + pair[0],
            "Authorization: " + pair[1], "Content-Type: application/json")).read();
        assertEquals(400, a.status(), a.body());
        assertEquals("Authorization", new JsonObject(a.body()).getString("field"));
      }
    }
    assertEquals(0L, redis.server().call("DBSIZE"), "nothing written");
  }

  @Test
  void http10IsStillServed() throws Exception {
    try (RawHttp c = new RawHttp(port)) {
      c.send("GET /health/live HTTP/1.0\r\n\r\n");
      assertEquals(200, c.read().status());
    }
  }

  /**
   * A request refused below Vert.x while earlier pipelined requests are still being answered (a
   * budget read waits for Redis) is answered after them, in order; then the connection ends.
   */
  @Test
  void aRefusedPipelinedRequestKeepsTheAnswersBeforeIt() throws Exception {
    try (RawHttp c = new RawHttp(port)) {
      c.send(request("GET", "/v1/budgets/nobody") + request("GET", "/v1/budgets") + request("GET", "/health/live")
          + "BREW /pot HTTP/1.1\r\nHost: t\r\n\r\n" + request("GET", "/health/live"));
      assertEquals(404, c.read().status(), "the first answer");
      assertEquals(200, c.read().status(), "the second");
      assertEquals(200, c.read().status(), "the third");
      RawHttp.Answer refused = c.read();
      assertEquals(501, refused.status(), "then the refusal");
      assertEquals("close", refused.header("connection"));
      c.timeout(3_000);
      assertTrue(c.closedByServer(), "what was pipelined after it is dropped");
    }
  }

  /** RFC 8259 section 8.1: JSON between systems is UTF-8; anything else is 415, never guessed at. */
  @Test
  void jsonInAnotherCharsetIs415() throws Exception {
    String json = "{\"ratio\": 0.2}";
    for (java.nio.charset.Charset cs : List.of(StandardCharsets.UTF_16BE, StandardCharsets.UTF_16LE,
        StandardCharsets.UTF_16, java.nio.charset.Charset.forName("UTF-32"))) {
      byte[] body = json.getBytes(cs);
      try (RawHttp c = new RawHttp(port)) {
        RawHttp.Answer r = c.send(bytes("PUT /v1/budgets/cs HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer " + TOKEN
            + "\r\nContent-Type: application/json\r\nContent-Length: " + body.length + "\r\n\r\n", body)).read();
        assertEquals(415, r.status(), cs + ": " + r.body());
        assertEquals("body", new JsonObject(r.body()).getString("field"), cs.toString());
      }
    }
    for (String type : List.of("application/json; charset=utf-16", "application/json;charset=\"ISO-8859-1\"")) {
      try (RawHttp c = new RawHttp(port)) {
        RawHttp.Answer r = c.send(put("cs", json, "Authorization: Bearer " + TOKEN, "Content-Type: " + type)).read();
        assertEquals(415, r.status(), type + ": " + r.body());
        assertEquals("Content-Type", new JsonObject(r.body()).getString("field"), type);
      }
    }
    try (RawHttp c = new RawHttp(port)) {
      RawHttp.Answer r = c.send(put("cs", json, "Authorization: Bearer " + TOKEN,
          "Content-Type: application/json; charset=UTF-8")).read();
      assertEquals(200, r.status(), r.body());
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"/v1/budgets?=1", "/v1/budgets?exhausted=true&=x", "/v1/budgets/x?="})
  void aQueryFieldWithoutANameIs400NamingIt(String target) throws Exception {
    try (RawHttp c = new RawHttp(port)) {
      RawHttp.Answer r = c.send(request("GET", target)).read();
      assertEquals(400, r.status(), target + ": " + r.body());
      JsonObject error = new JsonObject(r.body());
      assertEquals("query", error.getString("field"), r.body());
      String unnamed = target.substring(target.lastIndexOf(target.contains("&") ? '&' : '?') + 1);
      assertTrue(error.getString("error").contains(unnamed), r.body());
    }
  }

  private static byte[] bytes(String head, byte[] body) {
    byte[] h = head.getBytes(StandardCharsets.ISO_8859_1);
    byte[] out = java.util.Arrays.copyOf(h, h.length + body.length);
    System.arraycopy(body, 0, out, h.length, body.length);
    return out;
  }

  @ParameterizedTest
  @ValueSource(strings = {"Bearer", "bearer", "BEARER", "bEaReR"})
  void theBearerSchemeIsCaseInsensitive(String scheme) throws Exception {
    try (RawHttp c = new RawHttp(port)) {
      RawHttp.Answer r = c.send(put("x", "{\"ratio\": 0.1}", "Authorization: " + scheme + " " + TOKEN,
          "Content-Type: application/json")).read();
      assertEquals(200, r.status(), r.body());
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"Basic " + TOKEN, "Bearer", "Bearer " + TOKEN + "x", "Bearer" + TOKEN, "Token " + TOKEN})
  void otherCredentialsAre401(String authorization) throws Exception {
    try (RawHttp c = new RawHttp(port)) {
      RawHttp.Answer r = c.send(put("x", "{\"ratio\": 0.1}", "Authorization: " + authorization,
          "Content-Type: application/json")).read();
      assertEquals(401, r.status(), r.body());
      assertEquals("Bearer", r.header("www-authenticate"));
    }
    assertEquals(0L, redis.server().call("DBSIZE"));
  }

  @Test
  void contentLengthWithTransferEncodingIs400AndTheConnectionCloses() throws Exception {
    try (RawHttp c = new RawHttp(port)) {
      RawHttp.Answer r = c.send("PUT /v1/budgets/x HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer " + TOKEN
          + "\r\nContent-Type: application/json\r\nContent-Length: 14\r\nTransfer-Encoding: chunked\r\n\r\n"
          + "e\r\n{\"ratio\": 0.1}\r\n0\r\n\r\n"
          + "GET /health/live HTTP/1.1\r\nHost: t\r\n\r\n").read();
      assertEquals(400, r.status());
      assertEquals("header", new JsonObject(r.body()).getString("field"));
      assertEquals("close", r.header("connection"));
      assertTrue(c.closedByServer(), "closed, the smuggled request after it never answered");
    }
    assertEquals(0L, redis.server().call("DBSIZE"), "nothing written");
  }

  /** RFC 9112 section 6.3: a request's Transfer-Encoding must be exactly chunked, and never with Content-Length. */
  @ParameterizedTest
  @ValueSource(strings = {"Transfer-Encoding: xchunked", "Transfer-Encoding: gzip", "Transfer-Encoding: gzip, chunked",
      "Transfer-Encoding: chunked, gzip", "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked",
      "Content-Length: 4\r\nTransfer-Encoding: gzip", "Transfer-Encoding: identity"})
  void anyTransferEncodingButChunkedIs400AndTheConnectionCloses(String headers) throws Exception {
    try (RawHttp c = new RawHttp(port)) {
      RawHttp.Answer r = c.send("GET /health/live HTTP/1.1\r\nHost: t\r\n" + headers + "\r\n\r\n"
          + "GET /smuggled HTTP/1.1\r\nHost: t\r\n\r\n").read();
      assertEquals(400, r.status(), headers);
      assertEquals("header", new JsonObject(r.body()).getString("field"));
      assertEquals("close", r.header("connection"));
      assertTrue(c.closedByServer(), "closed, the smuggled request after it never answered");
    }
  }

  @Test
  void chunkedAloneIsStillRead() throws Exception {
    try (RawHttp c = new RawHttp(port)) {
      RawHttp.Answer r = c.send("PUT /v1/budgets/x HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer " + TOKEN
          + "\r\nContent-Type: application/json\r\nTransfer-Encoding: Chunked\r\n\r\ne\r\n{\"ratio\": 0.1}\r\n0\r\n\r\n").read();
      assertEquals(200, r.status(), r.body());
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"{\"ratio\": 0.1 /* c */}", "{\"ratio\": 0.1 // c\n}", "{\"ratio\": 0.1,}", "{'ratio': 0.1}",
      "{\"ratio\": 0.1} {}", "{\"ratio\": NaN}"})
  void jsonIsStrict(String body) throws Exception {
    try (RawHttp c = new RawHttp(port)) {
      RawHttp.Answer r = c.send(put("x", body, "Authorization: Bearer " + TOKEN, "Content-Type: application/json")).read();
      assertEquals(400, r.status(), body);
      assertEquals("body", new JsonObject(r.body()).getString("field"), r.body());
    }
    assertEquals(0L, redis.server().call("DBSIZE"), "nothing written");
  }

  @Test
  void aDuplicateKeyIs400NamingTheKey() throws Exception {
    try (RawHttp c = new RawHttp(port)) {
      RawHttp.Answer r = c.send(requestWithBody("POST", "/v1/budgets/x/requests", "{\"count\":1,\"count\":2}",
          "Authorization: Bearer " + TOKEN, "Content-Type: application/json")).read();
      assertEquals(400, r.status());
      assertEquals("count", new JsonObject(r.body()).getString("field"), r.body());
      RawHttp.Answer deep = c.send(requestWithBody("POST", "/v1/budgets/x/requests", "[".repeat(30_000),
          "Authorization: Bearer " + TOKEN, "Content-Type: application/json")).read();
      assertEquals(400, deep.status(), "30,000-deep nesting");
      RawHttp.Answer huge = c.send(requestWithBody("POST", "/v1/budgets/x/requests", "{\"count\": 1e999999999}",
          "Authorization: Bearer " + TOKEN, "Content-Type: application/json")).read();
      assertEquals(400, huge.status(), "a huge exponent is refused, not expanded");
      assertEquals("count", new JsonObject(huge.body()).getString("field"));
      for (String field : new String[] {"count", "unknown"}) {
        // an exponent past BigDecimal's range: 400 naming the field, not 500
        RawHttp.Answer overflow = c.send(requestWithBody("POST", "/v1/budgets/x/requests",
            "{\"" + field + "\": 1e9999999999}", "Authorization: Bearer " + TOKEN, "Content-Type: application/json")).read();
        assertEquals(400, overflow.status(), overflow.body());
        assertEquals(field, new JsonObject(overflow.body()).getString("field"), overflow.body());
      }
    }
    assertEquals(0L, redis.server().call("DBSIZE"));
  }

  @ParameterizedTest
  @ValueSource(strings = {"", "Content-Type: text/plain", "Content-Type: application/x-www-form-urlencoded",
      "Content-Type: application/jsonx"})
  void bodiesMustBeJson(String contentType) throws Exception {
    try (RawHttp c = new RawHttp(port)) {
      String[] headers = contentType.isEmpty() ? new String[] {"Authorization: Bearer " + TOKEN}
          : new String[] {"Authorization: Bearer " + TOKEN, contentType};
      RawHttp.Answer r = c.send(put("x", "{\"ratio\": 0.1}", headers)).read();
      assertEquals(415, r.status(), contentType);
      assertEquals("Content-Type", new JsonObject(r.body()).getString("field"));
      assertEquals("close", r.header("connection"), "answered before the body was read");
    }
    try (RawHttp c = new RawHttp(port)) {
      RawHttp.Answer ok = c.send(put("x", "{\"ratio\": 0.1}", "Authorization: Bearer " + TOKEN,
          "Content-Type: Application/JSON; charset=utf-8")).read();
      assertEquals(200, ok.status(), "media type case-insensitive, parameters allowed");
    }
  }

  @Test
  void errorsNameTheRealField() throws Exception {
    try (RawHttp c = new RawHttp(port)) {
      RawHttp.Answer badPath = c.send(request("GET", "/v1/budgets/%ZZ")).read();
      assertEquals(400, badPath.status());
      assertEquals("path", new JsonObject(badPath.body()).getString("field"));
      RawHttp.Answer notFound = c.send(request("GET", "/v2/nothing")).read();
      assertEquals(404, notFound.status());
      assertEquals("path", new JsonObject(notFound.body()).getString("field"));
      RawHttp.Answer query = c.send(request("GET", "/v1/budgets/x?verbose=1")).read();
      assertEquals(400, query.status());
      assertEquals("verbose", new JsonObject(query.body()).getString("field"));
      RawHttp.Answer unauthorized = c.send(put("x", "{}")).read();
      assertEquals("Authorization", new JsonObject(unauthorized.body()).getString("field"));
    }
    try (RawHttp c = new RawHttp(port)) {
      RawHttp.Answer longHeader = c.send("GET /health/live HTTP/1.1\r\nHost: t\r\nX-Big: " + "a".repeat(20_000)
          + "\r\n\r\n").read();
      assertEquals(431, longHeader.status());
      assertEquals("header", new JsonObject(longHeader.body()).getString("field"));
    }
    try (RawHttp c = new RawHttp(port)) {
      RawHttp.Answer longLine = c.send("GET /" + "a".repeat(10_000) + " HTTP/1.1\r\nHost: t\r\n\r\n").read();
      assertEquals(414, longLine.status());
      assertEquals("path", new JsonObject(longLine.body()).getString("field"));
    }
  }

  @Test
  void anUnauthenticatedBodyIsNeverRead() throws Exception {
    // 65,000 of the 65,536 announced bytes, then nothing: answered at once, the rest never awaited
    try (RawHttp c = new RawHttp(port)) {
      c.send("POST /v1/budgets/x/retries HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
          + "Content-Length: 65536\r\n\r\n" + "x".repeat(65_000));
      RawHttp.Answer r = c.read();
      assertEquals(401, r.status());
      assertEquals("close", r.header("connection"));
      assertTrue(c.closedByServer(), "closed after the answer; the body was discarded, not kept");
    }
  }

  @Test
  void theBodyLimitHoldsWhileItStreams() throws Exception {
    // chunked, so no Content-Length to refuse up front: counted as it arrives
    try (RawHttp c = new RawHttp(port)) {
      c.send("POST /v1/budgets/x/requests HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer " + TOKEN
          + "\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n");
      String chunk = Integer.toHexString(8192) + "\r\n" + "x".repeat(8192) + "\r\n";
      for (int i = 0; i < 9; i++) {
        c.send(chunk);
      }
      RawHttp.Answer r = c.read();
      assertEquals(413, r.status());
      assertTrue(c.closedByServer());
    }
    assertEquals(0L, redis.server().call("DBSIZE"));
  }

  @Test
  void unknownMethodsNeverReachTheMetrics() throws Exception {
    String before = metrics();
    try (RawHttp c = new RawHttp(port)) {
      int total = 10_000;
      int batch = 500;
      for (int sent = 0; sent < total; sent += batch) {
        StringBuilder b = new StringBuilder();
        for (int i = sent; i < sent + batch; i++) {
          b.append("M").append(i).append(" /v1/budgets/x HTTP/1.1\r\nHost: t\r\n\r\n");
        }
        c.send(b.toString());
        for (int i = 0; i < batch; i++) {
          RawHttp.Answer r = c.read();
          assertEquals(501, r.status());
        }
      }
    }
    String after = metrics();
    assertEquals(lines(before), lines(after), "no series added by 10,000 distinct methods over HTTP/1.1");
    assertFalse(after.contains("M9999"));
  }

  @Test
  void h2cIsNotServedAndItsMethodsNeverReachTheMetrics() throws Exception {
    HttpClient h2 = HttpClient.newBuilder().version(HttpClient.Version.HTTP_2).build();
    HttpRequest live = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/health/live")).build();
    h2.send(live, HttpResponse.BodyHandlers.ofString());
    String before = metrics();
    // prior knowledge: the preface, SETTINGS, then HEADERS frames each with another :method
    ByteArrayOutputStream frames = new ByteArrayOutputStream();
    frames.write("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1));
    frames.write(new byte[] {0, 0, 0, 4, 0, 0, 0, 0, 0});
    DefaultHttp2HeadersEncoder hpack = new DefaultHttp2HeadersEncoder();
    for (int i = 0; i < 1_000; i++) {
      Http2Headers h = new DefaultHttp2Headers().method("H2M" + i).path("/v1/budgets/x").scheme("http").authority("t");
      ByteBuf block = Unpooled.buffer();
      hpack.encodeHeaders(2 * i + 1, h, block);
      int len = block.readableBytes();
      int stream = 2 * i + 1;
      frames.write(new byte[] {(byte) (len >> 16), (byte) (len >> 8), (byte) len, 1, 5,
          (byte) (stream >> 24), (byte) (stream >> 16), (byte) (stream >> 8), (byte) stream});
      byte[] bytes = new byte[len];
      block.readBytes(bytes);
      frames.write(bytes);
      block.release();
    }
    try (RawHttp c = new RawHttp(port)) {
      try {
        c.send(frames.toByteArray());
      } catch (IOException closedWhileWriting) {
        // the server may close before it has taken every frame
      }
      RawHttp.Answer r = c.read();
      assertEquals(501, r.status(), "an HTTP/2 preface is an unknown HTTP/1.1 method here");
      assertTrue(c.closedByServer());
    }
    // h2c by Upgrade: answered in HTTP/1.1, never switched
    HttpResponse<String> upgraded = h2.send(live, HttpResponse.BodyHandlers.ofString());
    assertEquals(200, upgraded.statusCode());
    assertEquals(HttpClient.Version.HTTP_1_1, upgraded.version());
    String after = metrics();
    assertEquals(lines(before), lines(after), "no series added by h2c");
    assertFalse(after.contains("H2M"), "no h2c method in any tag");
  }

  @Test
  void abortedUploadsAreNotLoggedAsErrors() throws Exception {
    List<LogRecord> loud = new ArrayList<>();
    Handler capture = new Handler() {
      @Override
      public void publish(LogRecord r) {
        if (r.getLevel().intValue() >= Level.INFO.intValue()) {
          synchronized (loud) {
            loud.add(r);
          }
        }
      }

      @Override
      public void flush() {}

      @Override
      public void close() {}
    };
    Logger root = Logger.getLogger("");
    root.addHandler(capture);
    try {
      for (int i = 0; i < 5; i++) {
        try (RawHttp c = new RawHttp(port)) {
          c.send("PUT /v1/budgets/x HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer " + TOKEN
              + "\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"ratio\":");
        }
      }
      // a request after them: by its answer the aborted ones have been handled
      try (RawHttp c = new RawHttp(port)) {
        assertEquals(200, c.send(request("GET", "/health/live")).read().status());
      }
    } finally {
      root.removeHandler(capture);
    }
    synchronized (loud) {
      assertTrue(loud.isEmpty(), "no INFO or louder for aborted uploads: " + loud.stream()
          .map(r -> r.getLevel() + " " + r.getLoggerName() + " " + r.getMessage()).toList());
    }
    assertEquals(0L, redis.server().call("DBSIZE"));
  }

  @Test
  void onceAMinuteMeansOnceAMinute() {
    long[] now = {0};
    OncePerMinute log = new OncePerMinute("test events", () -> now[0]);
    assertTrue(log.report("a"));
    assertFalse(log.report("b"));
    now[0] += java.util.concurrent.TimeUnit.SECONDS.toNanos(59);
    assertFalse(log.report("c"));
    now[0] += java.util.concurrent.TimeUnit.SECONDS.toNanos(1);
    assertTrue(log.report("d"));
  }

  private static String metrics() throws Exception {
    try (RawHttp c = new RawHttp(port)) {
      c.send(request("GET", "/metrics"));
      c.read(); // the first scrape creates its own series; the second is the baseline
      return c.send(request("GET", "/metrics")).read().body();
    }
  }

  private static int lines(String s) {
    return s.split("\n").length;
  }
}
