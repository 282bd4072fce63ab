package io.retrybudget.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import io.retrybudget.server.servlet.IdempotencyFilter;
import io.retrybudget.server.servlet.Waiting;
import io.retrybudget.testing.RedisExtension;
import jakarta.servlet.MultipartConfigElement;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import jakarta.servlet.http.Part;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.time.Duration;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Behind {@link IdempotencyFilter} a servlet reads form parameters and multipart parts as it does
 * without the filter, on Jetty 12.1 and on Tomcat 11: every answer of the guarded servlet is
 * compared with the same servlet's answer without the filter, in the same container.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ServletFormTest {
  @RegisterExtension
  static final RedisExtension redis = RedisExtension.standalone();
  private static final int MAX_BODY = 8 * 1024;

  private final AtomicInteger executions = new AtomicInteger();
  private RedisBudgetStore connection;
  private IdempotencyGuard guard;
  private ServletServer jetty;
  private ServletServer tomcat;
  private final Map<String, Integer> ports = new TreeMap<>();

  /** Answers with everything the Servlet API shows of the request's parameters and parts. */
  final class EchoServlet extends HttpServlet {
    @Override
    protected void doPost(HttpServletRequest req, HttpServletResponse res) throws IOException, ServletException {
      executions.incrementAndGet();
      StringBuilder out = new StringBuilder();
      out.append("amount=").append(req.getParameter("amount")).append('\n');
      out.append("values(tag)=").append(Arrays.toString(req.getParameterValues("tag"))).append('\n');
      List<String> names = Collections.list(req.getParameterNames());
      Collections.sort(names);
      out.append("names=").append(names).append('\n');
      new TreeMap<>(req.getParameterMap()).forEach((k, v) -> out.append(k).append("=").append(Arrays.toString(v)).append('\n'));
      String type = req.getContentType();
      if (type != null && type.startsWith("multipart/")) {
        for (Part p : req.getParts()) {
          out.append("part ").append(p.getName()).append(" file=").append(p.getSubmittedFileName())
              .append(" type=").append(p.getContentType()).append(" bytes=")
              .append(new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8)).append('\n');
        }
      }
      res.setContentType("text/plain;charset=UTF-8");
      res.getOutputStream().write(out.toString().getBytes(StandardCharsets.UTF_8));
    }
  }

  @BeforeAll
  void start() throws Exception {
    connection = RedisBudgetStore.connect(redis.connectionOptions().build());
    guard = new IdempotencyGuard(new ClaimStore(connection, Duration.ofSeconds(2)), IdempotencyConfig.builder().build());
    String tmp = Files.createTempDirectory("parts").toString();
    MultipartConfigElement multipart = new MultipartConfigElement(tmp, 64 * 1024, 64 * 1024, 1024);
    jetty = ServletServer.jetty();
    tomcat = ServletServer.tomcat();
    for (ServletServer s : List.of(jetty, tomcat)) {
      s.servlet("/direct", new EchoServlet(), multipart).servlet("/guarded", new EchoServlet(), multipart)
          .servlet("/guarded-async", new EchoServlet(), multipart)
          .filter("/guarded", new IdempotencyFilter(guard, MAX_BODY))
          .asyncFilter("/guarded-async", new IdempotencyFilter(guard, MAX_BODY, Waiting.ASYNC));
    }
    ports.put("jetty", jetty.start());
    ports.put("tomcat", tomcat.start());
  }

  @AfterAll
  void stop() throws Exception {
    jetty.close();
    tomcat.close();
    guard.close();
    connection.close();
  }

  private HttpResponse<String> post(String container, String path, String key, String contentType, byte[] body) {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + ports.get(container) + path))
        .timeout(Duration.ofSeconds(20)).header("Content-Type", contentType)
        .POST(HttpRequest.BodyPublishers.ofByteArray(body));
    if (key != null) {
      b.header("Idempotency-Key", key);
    }
    return new HttpTestClient(ports.get(container)).send(b.build());
  }

  private static byte[] multipart(String boundary, String amount, String fileText) {
    String crlf = "\r\n";
    String body = "--" + boundary + crlf
        + "Content-Disposition: form-data; name=\"amount\"" + crlf + crlf + amount + crlf
        + "--" + boundary + crlf
        + "Content-Disposition: form-data; name=\"tag\"" + crlf + crlf + "a" + crlf
        + "--" + boundary + crlf
        + "Content-Disposition: form-data; name=\"receipt\"; filename=\"r.txt\"" + crlf
        + "Content-Type: text/plain" + crlf + crlf + fileText + crlf
        + "--" + boundary + "--" + crlf;
    return body.getBytes(StandardCharsets.UTF_8);
  }

  @ParameterizedTest
  @ValueSource(strings = {"jetty", "tomcat"})
  void formParametersReachTheServletAsWithoutTheFilter(String container) {
    String form = "amount=42&tag=a&tag=b+c&note=%C3%A9t%C3%A9&empty=&flag";
    String type = "application/x-www-form-urlencoded";
    byte[] bytes = form.getBytes(StandardCharsets.US_ASCII);
    HttpResponse<String> direct = post(container, "/direct?tag=q", null, type, bytes);
    HttpResponse<String> guarded = post(container, "/guarded?tag=q", UUID.randomUUID().toString(), type, bytes);
    assertEquals(200, guarded.statusCode(), guarded.body());
    assertTrue(direct.body().startsWith("amount=42\n"), direct.body());
    assertEquals(direct.body(), guarded.body(), container + ": the servlet sees the same parameters behind the filter");
    HttpResponse<String> utf8 = post(container, "/guarded", UUID.randomUUID().toString(), type + "; charset=UTF-8", bytes);
    assertTrue(utf8.body().contains("note=[été]"), utf8.body());
  }

  @ParameterizedTest
  @ValueSource(strings = {"jetty", "tomcat"})
  void aFormPostIsStoredAndReplayedAndAnotherAmountIs422(String container) {
    String key = UUID.randomUUID().toString();
    String type = "application/x-www-form-urlencoded";
    int before = executions.get();
    HttpResponse<String> first = post(container, "/guarded", key, type, "amount=42".getBytes(StandardCharsets.US_ASCII));
    HttpResponse<String> again = post(container, "/guarded", key, type, "amount=42".getBytes(StandardCharsets.US_ASCII));
    assertEquals(200, first.statusCode());
    assertTrue(first.body().startsWith("amount=42"), first.body());
    assertEquals(first.body(), again.body());
    assertEquals("true", again.headers().firstValue(IdempotencyGuard.REPLAYED_HEADER).orElse(null));
    assertEquals(422, post(container, "/guarded", key, type, "amount=43".getBytes(StandardCharsets.US_ASCII)).statusCode());
    assertEquals(before + 1, executions.get());
  }

  @ParameterizedTest
  @ValueSource(strings = {"jetty", "tomcat"})
  void multipartPartsAndFieldsReachTheServletAsWithoutTheFilter(String container) {
    String key = UUID.randomUUID().toString();
    byte[] body = multipart("b0undary1", "42", "the receipt");
    HttpResponse<String> direct = post(container, "/direct", null, "multipart/form-data; boundary=b0undary1", body);
    HttpResponse<String> guarded = post(container, "/guarded", key, "multipart/form-data; boundary=b0undary1", body);
    assertEquals(200, guarded.statusCode(), guarded.body());
    assertTrue(direct.body().contains("part receipt file=r.txt type=text/plain bytes=the receipt"), direct.body());
    assertEquals(direct.body(), guarded.body(), container + ": the servlet sees the same parts behind the filter");
    int before = executions.get();
    // a retry of the same form whose client chose another boundary is the same request
    HttpResponse<String> retry = post(container, "/guarded", key, "multipart/form-data; boundary=other-b0undary",
        multipart("other-b0undary", "42", "the receipt"));
    assertEquals(guarded.body(), retry.body());
    assertEquals("true", retry.headers().firstValue(IdempotencyGuard.REPLAYED_HEADER).orElse(null));
    HttpResponse<String> otherFile = post(container, "/guarded", key, "multipart/form-data; boundary=b0undary1",
        multipart("b0undary1", "42", "another receipt"));
    assertEquals(422, otherFile.statusCode(), "another file under the same key: " + otherFile.body());
    assertEquals(before, executions.get());
  }

  @ParameterizedTest
  @ValueSource(strings = {"jetty", "tomcat"})
  void formsAndPartsSurviveTheAsyncDispatchOfAFilterThatWaitsOffTheThread(String container) {
    String form = "amount=42&tag=a&tag=b+c";
    String type = "application/x-www-form-urlencoded";
    byte[] bytes = form.getBytes(StandardCharsets.US_ASCII);
    HttpResponse<String> direct = post(container, "/direct?tag=q", null, type, bytes);
    HttpResponse<String> guarded = post(container, "/guarded-async?tag=q", UUID.randomUUID().toString(), type, bytes);
    assertEquals(direct.body(), guarded.body(), container + ": form parameters after the async dispatch");
    byte[] body = multipart("b0undary2", "42", "the receipt");
    HttpResponse<String> directParts = post(container, "/direct", null, "multipart/form-data; boundary=b0undary2", body);
    HttpResponse<String> guardedParts = post(container, "/guarded-async", UUID.randomUUID().toString(),
        "multipart/form-data; boundary=b0undary2", body);
    assertEquals(directParts.body(), guardedParts.body(), container + ": parts after the async dispatch");
  }

  @ParameterizedTest
  @ValueSource(strings = {"jetty", "tomcat"})
  void bodiesOverTheBoundAre413AndNothingRuns(String container) {
    int before = executions.get();
    byte[] bigForm = ("amount=1&pad=" + "x".repeat(MAX_BODY)).getBytes(StandardCharsets.US_ASCII);
    assertEquals(413, post(container, "/guarded", UUID.randomUUID().toString(), "application/x-www-form-urlencoded",
        bigForm).statusCode());
    assertEquals(413, post(container, "/guarded", UUID.randomUUID().toString(), "multipart/form-data; boundary=bb",
        multipart("bb", "1", "y".repeat(MAX_BODY))).statusCode());
    assertEquals(before, executions.get());
  }
}
