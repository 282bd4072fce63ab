package io.retrybudget.spring;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * This module's README shows what the tests run, as it is: the dependency block of the sample
 * application that BootSampleMatrixTest builds, its application.yaml, and the YAML and beans
 * RetryBudgetRestClientsTest runs.
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
        MODULE.resolve("src/test/resources/readme/rest-clients.yaml")}) {
      assertTrue(readme().contains("```yaml\n" + Files.readString(yaml) + "```"), "README shows " + yaml);
    }
  }

  @Test
  void theRestClientBeansAreTheTestsAsTheyAre() throws IOException {
    String beans = between(Files.readString(MODULE.resolve("src/test/java/io/retrybudget/spring/RetryBudgetRestClientsTest.java")));
    assertTrue(beans.contains("RestClient paymentsClient(RestClient.Builder builder)"), beans);
    assertTrue(readme().contains("```java\n" + beans + "\n```"), "README shows RetryBudgetRestClientsTest's beans:\n" + beans);
  }
}
