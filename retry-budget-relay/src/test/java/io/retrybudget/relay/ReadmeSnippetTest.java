package io.retrybudget.relay;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** The module README's Java snippet is {@link ReadmeSnippet}'s lines, so it compiles. */
class ReadmeSnippetTest {
  @Test
  void theReadmeShowsTheCompiledSnippet() throws IOException {
    String source = Files.readString(Path.of("src/test/java/io/retrybudget/relay/ReadmeSnippet.java"));
    String snippet = source.substring(source.indexOf("// README:begin\n") + "// README:begin\n".length(),
        source.indexOf("    // README:end"));
    String example = snippet.lines().map(l -> l.startsWith("    ") ? l.substring(4) : l)
        .collect(Collectors.joining("\n"));
    String readme = Files.readString(Path.of("README.md"));
    assertTrue(readme.contains("```java\n" + example + "\n```"), "README.md shows ReadmeSnippet's lines as they are:\n" + example);
  }
}
