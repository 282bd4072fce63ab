package io.retrybudget.deploy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.BudgetConfig;
import java.io.IOException;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The READMEs a newcomer follows: no dead relative link in any of them, the top README's SDK example
 * is the compiled and tested {@code QuickStart} (client-sdk tests), its defaults table says what
 * {@code BudgetConfig} does, and its dependency blocks name the version the build makes.
 */
class ReadmeTest {
  private static final Path REPO = DeployFiles.ROOT.getParent();
  // [text](target) and ![alt](target); a target ends at whitespace or ')'
  private static final Pattern LINK = Pattern.compile("!?\\[[^\\]]*\\]\\(([^)\\s]+)(?:\\s+\"[^\"]*\")?\\)");
  private static final Pattern FENCE = Pattern.compile("(?m)^\\s*```");

  static List<Path> markdownFiles() throws IOException {
    try (Stream<Path> files = Files.walk(REPO)) {
      return files.filter(p -> p.getFileName().toString().endsWith(".md"))
          .filter(p -> {
            String rel = REPO.relativize(p).toString();
            return !rel.contains("/target/") && !rel.startsWith("target/") && !rel.startsWith(".") && !rel.contains("/.");
          })
          .sorted().collect(Collectors.toList());
    }
  }

  /** The relative links of a Markdown text, outside code blocks and code spans. */
  static List<String> relativeLinks(String markdown) {
    List<String> out = new ArrayList<>();
    boolean inFence = false;
    for (String line : markdown.split("\n", -1)) {
      if (FENCE.matcher(line).lookingAt()) {
        inFence = !inFence;
        continue;
      }
      if (inFence || line.startsWith("    ")) {
        continue;
      }
      Matcher m = LINK.matcher(line.replaceAll("`[^`]*`", ""));
      while (m.find()) {
        String target = m.group(1);
        if (!target.matches("^[a-zA-Z][a-zA-Z0-9+.-]*:.*") && !target.startsWith("#")) {
          out.add(target);
        }
      }
    }
    return out;
  }

  @Test
  void everyRelativeLinkInEveryMarkdownFileResolves() throws IOException {
    List<Path> files = markdownFiles();
    assertTrue(files.size() >= 13, "the READMEs were found: " + files);
    List<String> dead = new ArrayList<>();
    int checked = 0;
    for (Path md : files) {
      for (String link : relativeLinks(Files.readString(md))) {
        String path = URLDecoder.decode(link.split("#", 2)[0], StandardCharsets.UTF_8);
        if (path.isEmpty()) {
          continue;
        }
        checked++;
        Path target = md.getParent().resolve(path).normalize();
        if (!target.startsWith(REPO) || !Files.exists(target)) {
          dead.add(REPO.relativize(md) + ": " + link);
        }
      }
    }
    assertEquals(List.of(), dead, "dead relative links");
    assertTrue(checked > 30, "links were checked: " + checked);
  }

  @Test
  void theLinkCheckerSeesDeadLinksAndSkipsCode() {
    assertEquals(List.of("a.md", "docs/x.png", "b/c.md#part"),
        relativeLinks("see [a](a.md) and ![shot](docs/x.png) [web](https://x.org) [here](#top)\n"
            + "```\n[in code](nope.md)\n```\n    [indented](nope2.md)\n`[span](nope3.md)` [c](b/c.md#part)\n"));
  }

  @Test
  void theSdkExampleIsTheCompiledQuickStart() throws IOException {
    String source = Files.readString(REPO.resolve("client-sdk/src/test/java/io/retrybudget/examples/QuickStart.java"));
    String snippet = source.substring(source.indexOf("// README:begin\n") + "// README:begin\n".length(),
        source.indexOf("    // README:end"));
    String example = snippet.lines().map(l -> l.startsWith("    ") ? l.substring(4) : l)
        .collect(Collectors.joining("\n"));
    assertTrue(example.lines().count() <= 15, "at most 15 lines: " + example.lines().count());
    String readme = Files.readString(REPO.resolve("README.md"));
    assertTrue(readme.contains("```java\n" + example + "\n```"), "README.md shows QuickStart's lines as they are:\n" + example);
    assertFalse(example.contains("recordFirstAttempt"), "the executor counts first attempts; the example must not");
  }

  @Test
  void theDefaultsTableSaysWhatBudgetConfigDoes() throws IOException {
    String readme = Files.readString(REPO.resolve("README.md"));
    BudgetConfig defaults = BudgetConfig.builder("any").build();
    assertEquals(0.1, defaults.ratio());
    assertTrue(readme.contains("| `ratio` | " + defaults.ratio() + " |"), "ratio " + defaults.ratio());
    assertTrue(readme.contains("| `window_seconds` | " + defaults.windowSeconds() + " s |"), "window");
    assertTrue(readme.contains("| `min_retries_per_second` | " + defaults.minRetriesPerSecond() + "/s |"), "floor");
    assertTrue(readme.contains("| `mode` | `" + defaults.mode().wireName() + "` |"), "mode");
  }

  @Test
  void dependencyBlocksNameTheVersionTheBuildMakes() throws IOException {
    String pom = Files.readString(REPO.resolve("pom.xml"));
    Matcher own = Pattern.compile("<artifactId>retry-budget-parent</artifactId>\\s*<version>([^<]+)</version>").matcher(pom);
    assertTrue(own.find(), "the parent pom's version");
    String version = own.group(1);
    Matcher blocks = Pattern.compile("<groupId>io\\.retrybudget</groupId>\\s*<artifactId>([^<]+)</artifactId>\\s*"
        + "(?:<version>([^<]+)</version>)?").matcher(Files.readString(REPO.resolve("README.md")));
    int seen = 0;
    while (blocks.find()) {
      seen++;
      if (blocks.group(2) != null) {
        assertEquals(version, blocks.group(2), "README.md's block for " + blocks.group(1));
      }
    }
    assertTrue(seen >= 8, "a block per module: " + seen);
  }

  /**
   * The README opens with what it is, then its two commands, the run command and the test command,
   * both through the Maven wrapper (a fresh machine needs only a JDK), and {@code .ci/run} runs
   * exactly that test command.
   */
  @Test
  void theTwoCommandsComeFirstUseTheWrapperAndCiRunsTheTestCommand() throws IOException {
    String readme = Files.readString(REPO.resolve("README.md"));
    List<String> sections = new ArrayList<>();
    Matcher heading = Pattern.compile("(?m)^## (.+)$").matcher(readme);
    while (heading.find()) {
      sections.add(heading.group(1));
    }
    assertEquals(List.of("Two commands", "The SDK in 15 lines", "Modules"), sections.subList(0, 3),
        "what it is, the two commands, the SDK example, the module map: " + sections);
    List<String> commands = readme.lines().filter(l -> l.startsWith("    ./mvnw ")).map(String::strip).toList();
    assertTrue(commands.size() >= 2 && commands.get(0).contains("-pl coordinator") && commands.get(0).contains("java "),
        "the run command first: " + commands);
    String test = commands.get(1);
    assertEquals("./mvnw -B verify", test, "the test command");
    List<String> ci = Files.readAllLines(REPO.resolve(".ci/run")).stream().map(String::strip).toList();
    assertTrue(ci.contains(test), ".ci/run runs the README's test command as it is: " + test);
    assertTrue(Files.isExecutable(REPO.resolve("mvnw")), "mvnw is executable");
    assertTrue(Files.readString(REPO.resolve(".mvn/wrapper/maven-wrapper.properties")).contains("distributionUrl="),
        "the wrapper names the Maven it fetches");
  }
}
