package io.retrybudget.reactor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.testing.RedisExtension;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.springframework.web.reactive.function.client.WebClient;
import java.util.concurrent.atomic.AtomicInteger;
import io.retrybudget.retry.RetryBudgetExhaustedException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import reactor.core.publisher.Mono;

/** The README's example runs against a real Redis and server, and the README shows it as it is compiled. */
class QuickStartTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();

  @Test
  void theExampleAnswersThroughBothForms() {
    AtomicInteger quotes = new AtomicInteger();
    try (TestServer server = new TestServer()) {
      server.answer((req, res) -> res.sendString(Mono.just("item 42")));
      // warm WebClient and Reactor Netty up first: a cold JVM's first exchange (class loading,
      // event loops) can take longer than the example's 2 s deadline on a loaded machine
      WebClient.create().get().uri(server.url("/warm-up")).retrieve().toBodilessEntity().block(Duration.ofSeconds(30));
      server.seen.clear();
      String answer = QuickStart.run(redis.uri(), server.url(""), () -> {
        if (quotes.incrementAndGet() == 1) {
          throw new IOException("connection reset"); // retried when the budget grants it
        }
        return "quote " + quotes.get();
      });
      assertEquals("item 42, quote 2", answer);
      assertEquals(List.of("1"), server.seen.stream().map(s -> s.header("X-Retry-Attempt")).toList());
      assertTrue(server.seen.get(0).header("X-Request-Deadline-Ms") != null, "the 2 s deadline is told");
    } catch (RetryBudgetExhaustedException denied) {
      // the permit request missed the budget's 20 ms call timeout on a loaded machine: in doubt,
      // refused, and the call failed fast instead of retrying
      assertEquals(1, quotes.get(), "no retry without a permit");
    }
  }

  @Test
  void theReadmeShowsTheCompiledExample() throws IOException {
    String source = Files.readString(Path.of("src/test/java/io/retrybudget/reactor/QuickStart.java"));
    int begin = source.indexOf("// README:begin\n") + "// README:begin\n".length();
    int end = source.indexOf("    // README:end");
    String example = source.substring(begin, end).stripTrailing().lines()
        .map(line -> line.length() >= 4 ? line.substring(4) : line).reduce((a, b) -> a + "\n" + b).orElseThrow();
    String readme = Files.readString(Path.of("README.md"));
    assertTrue(readme.contains("```java\n" + example + "\n```"), "README.md shows QuickStart's lines as they are:\n" + example);
    assertEquals(1, readme.split("```xml", -1).length - 1, "one dependency block");
  }
}
