package io.retrybudget.spring;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * This module's README shows what the tests run, as it is: the dependency block of the sample
 * application that BootSampleMatrixTest builds, its application.yaml, the YAML and beans
 * RetryBudgetRestClientsTest and RetryBudgetWebClientsTest run, and ReactiveRetryableBudgetTest's
 * reactive {@code @Retryable} method.
 */
class ReadmeTest {
  private static final Path MODULE = Path.of("").toAbsolutePath();

  private static String readme() throws IOException {
    return Files.readString(MODULE.resolve("README.md"));
  }

  /** The lines between {@code // README:begin} and {@code // README:end}, four spaces less indented. */
  private static String between(String source) {
    String snippet = source.substring(source.indexOf("// README:begin\n") + "// README:begin\n".length(),
        source.indexOf("    // README:end"));
    return snippet.lines().map(l -> l.startsWith("    ") ? l.substring(4) : l).collect(Collectors.joining("\n"));
  }

  @Test
  void theDependencyBlockIsTheSamplesWithThisVersion() throws IOException {
    String pom = Files.readString(MODULE.resolve("src/it/boot-sample/boot-managed-lettuce/pom.xml"));
    String version = System.getProperty("retrybudget.sample.version", "0.2.0-SNAPSHOT");
    String starter = pom.substring(pom.indexOf("    <dependency>\n      <groupId>io.retrybudget</groupId>"));
    String block = starter.substring(0, starter.indexOf("    <dependency>\n      <groupId>org.springframework.boot</groupId>\n"
        + "      <artifactId>spring-boot-starter-test</artifactId>"));
    String expected = block.lines().map(l -> l.substring(4)).collect(Collectors.joining("\n"))
        .replace("${retrybudget.version}", version);
    assertTrue(expected.contains("spring-boot-starter-data-redis"), expected);
    assertTrue(readme().contains("```xml\n" + expected + "\n```"), "README shows the sample's dependencies:\n" + expected);
  }

  @Test
  void theYamlIsTheSamplesAndTheTestsAsTheyAre() throws IOException {
    for (Path yaml : new Path[] {MODULE.resolve("src/it/boot-sample/src/main/resources/application.yaml"),
        MODULE.resolve("src/test/resources/readme/rest-clients.yaml"),
        MODULE.resolve("src/test/resources/readme/web-clients.yaml")}) {
      assertTrue(readme().contains("```yaml\n" + Files.readString(yaml) + "```"), "README shows " + yaml);
    }
  }

  @Test
  void theJavaSnippetsAreTheTestsAsTheyAre() throws IOException {
    snippetOf("RetryBudgetRestClientsTest", "RestClient paymentsClient(RestClient.Builder builder)");
    snippetOf("RetryBudgetWebClientsTest", "WebClient ordersWebClient(WebClient.Builder builder)");
    snippetOf("ReactiveRetryableBudgetTest", "public Mono<String> spend()");
  }

  private static void snippetOf(String test, String expected) throws IOException {
    String code = between(Files.readString(MODULE.resolve("src/test/java/io/retrybudget/spring/" + test + ".java")));
    assertTrue(code.contains(expected), code);
    assertTrue(readme().contains("```java\n" + code + "\n```"), "README shows " + test + "'s snippet:\n" + code);
  }

  @Test
  void theReactorDependencyIsThisVersion() throws IOException {
    String version = System.getProperty("retrybudget.sample.version", "0.2.0-SNAPSHOT");
    assertTrue(readme().contains("<artifactId>retry-budget-reactor</artifactId>\n  <version>" + version + "</version>"),
        "README's retry-budget-reactor dependency is version " + version);
  }
}
