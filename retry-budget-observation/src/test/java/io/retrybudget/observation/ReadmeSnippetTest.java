package io.retrybudget.observation;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.LocalRetryBudget;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** The module README's Java snippet is {@link ReadmeSnippet}'s lines, so it compiles; and it does what it says. */
class ReadmeSnippetTest {
  @Test
  void theReadmeShowsTheCompiledSnippet() throws IOException {
    String source = Files.readString(Path.of("src/test/java/io/retrybudget/observation/ReadmeSnippet.java"));
    String snippet = source.substring(source.indexOf("// README:begin\n") + "// README:begin\n".length(),
        source.indexOf("    // README:end"));
    String example = snippet.lines().map(l -> l.startsWith("    ") ? l.substring(4) : l)
        .collect(Collectors.joining("\n"));
    String readme = Files.readString(Path.of("README.md"));
    assertTrue(readme.contains("```java\n" + example + "\n```"), "README.md shows ReadmeSnippet's lines as they are:\n" + example);
  }

  @Test
  void theSnippetTracesACallThatRetried() throws Exception {
    try (OtelTracing otel = new OtelTracing()) {
      AtomicInteger n = new AtomicInteger();
      String body = ReadmeSnippet.run(otel.registry, new LocalRetryBudget(BudgetConfig.builder("payments-api").build()),
          () -> {
            if (n.getAndIncrement() == 0) {
              throw new IOException("reset");
            }
            return "paid";
          });
      assertTrue(body.startsWith("paid"), body);
      otel.awaitCall();
      assertEquals(2, otel.named(ObservationRetryListener.ATTEMPT).size());
    }
  }
}
