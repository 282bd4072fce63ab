package io.retrybudget.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.testing.RedisExtension;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The README's example runs against a real Redis on a real Jetty, and the README shows it as it is compiled. */
class ServletQuickStartTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();

  @Test
  void theExampleChargesOncePerKeyAndReplaysTheAnswer() throws Exception {
    AtomicInteger charges = new AtomicInteger();
    HttpServlet payments = new HttpServlet() {
      @Override
      protected void doPost(HttpServletRequest req, HttpServletResponse res) throws IOException {
        res.setStatus(201);
        res.getWriter().write("charge " + charges.incrementAndGet());
      }
    };
    try (ServletQuickStart.Running running = ServletQuickStart.start(redis.uri(), payments)) {
      HttpTestClient http = new HttpTestClient(running.port());
      String key = UUID.randomUUID().toString();
      HttpResponse<String> first = http.post("/payments", key, "{\"amount\":1}");
      HttpResponse<String> again = http.post("/payments", key, "{\"amount\":1}");
      assertEquals(List.of(201, 201), List.of(first.statusCode(), again.statusCode()));
      assertEquals(List.of("charge 1", "charge 1"), List.of(first.body(), again.body()));
      assertEquals("true", again.headers().firstValue(IdempotencyGuard.REPLAYED_HEADER).orElse(null));
      assertEquals(1, charges.get(), "the charge ran once");
      assertEquals(400, http.post("/payments", null, "{\"amount\":1}").statusCode(), "no key, no charge");
    }
  }

  @Test
  void theReadmeShowsTheCompiledExample() throws IOException {
    String source = Files.readString(Path.of("src/test/java/io/retrybudget/server/ServletQuickStart.java"));
    int begin = source.indexOf("// README:begin\n") + "// README:begin\n".length();
    int end = source.indexOf("    // README:end");
    String example = source.substring(begin, end).stripTrailing().lines()
        .map(line -> line.length() >= 4 ? line.substring(4) : line).reduce((a, b) -> a + "\n" + b).orElseThrow();
    String readme = Files.readString(Path.of("README.md"));
    assertTrue(readme.contains("```java\n" + example + "\n```"), "README.md shows ServletQuickStart's lines as they are:\n" + example);
    assertEquals(1, readme.split("```xml", -1).length - 1, "one dependency block");
  }
}
