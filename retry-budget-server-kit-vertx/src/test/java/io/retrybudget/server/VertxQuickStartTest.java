package io.retrybudget.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.testing.RedisExtension;
import io.vertx.core.Vertx;
import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The README's example runs against a real Redis and Vert.x server, and the README shows it as it is compiled. */
class VertxQuickStartTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();

  @Test
  void theExampleChargesOncePerKeyAndReplaysTheAnswer() {
    AtomicInteger charges = new AtomicInteger();
    Vertx vertx = Vertx.vertx();
    try (VertxQuickStart.Running running = VertxQuickStart.start(vertx, redis.uri(), () -> new StoredResponse(201,
        List.of(), ("charge " + charges.incrementAndGet()).getBytes(StandardCharsets.UTF_8)))) {
      HttpTestClient http = new HttpTestClient(running.server().actualPort());
      String key = UUID.randomUUID().toString();
      HttpResponse<String> first = http.post("/payments", key, "{\"amount\":1}");
      HttpResponse<String> again = http.post("/payments", key, "{\"amount\":1}");
      assertEquals(List.of(201, 201), List.of(first.statusCode(), again.statusCode()));
      assertEquals(List.of("charge 1", "charge 1"), List.of(first.body(), again.body()));
      assertEquals("true", again.headers().firstValue(IdempotencyGuard.REPLAYED_HEADER).orElse(null));
      assertEquals(1, charges.get(), "the charge ran once");
      assertEquals(400, http.post("/payments", null, "{\"amount\":1}").statusCode(), "no key, no charge");
    } finally {
      vertx.close().await();
    }
  }

  @Test
  void theReadmeShowsTheCompiledExample() throws IOException {
    String source = Files.readString(Path.of("src/test/java/io/retrybudget/server/VertxQuickStart.java"));
    int begin = source.indexOf("// README:begin\n") + "// README:begin\n".length();
    int end = source.indexOf("    // README:end");
    String example = source.substring(begin, end).stripTrailing().lines()
        .map(line -> line.length() >= 4 ? line.substring(4) : line).reduce((a, b) -> a + "\n" + b).orElseThrow();
    String readme = Files.readString(Path.of("README.md"));
    assertTrue(readme.contains("```java\n" + example + "\n```"), "README.md shows VertxQuickStart's lines as they are:\n" + example);
    assertEquals(1, readme.split("```xml", -1).length - 1, "one dependency block");
  }
}
