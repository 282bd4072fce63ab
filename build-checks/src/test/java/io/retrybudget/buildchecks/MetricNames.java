package io.retrybudget.buildchecks;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The metric names, observation names and tag keys the main sources of every module use, and the
 * ones docs/METRICS.md lists. A source counts when it uses Micrometer (imports
 * {@code io.micrometer.core.instrument} or {@code io.micrometer.observation}); in it, a name is the
 * first string of a meter builder, of a {@code counter/gauge/timer/summary(...)} call (a registry's
 * or a helper's), of {@code Observation.start/createNotStarted}, the key of a {@code .tag(...)}, or
 * any string literal that starts with {@code retry.} (names held in constants or passed on), or a
 * dotted lower-case {@code static final String} constant ({@code http.request.resend_count}).
 */
final class MetricNames {
  private static final Pattern BUILDER = Pattern.compile(
      "\\b(?:Counter|Gauge|Timer|MultiGauge|FunctionCounter|FunctionTimer|DistributionSummary|LongTaskTimer|TimeGauge)"
          + "\\s*\\.\\s*builder\\s*\\(\\s*\"([^\"]+)\"");
  private static final Pattern CALL = Pattern.compile("\\b(?:counter|gauge|timer|summary)\\s*\\(\\s*\"([^\"]+)\"");
  private static final Pattern OBSERVATION = Pattern.compile("\\bObservation\\s*\\.\\s*(?:start|createNotStarted)\\s*\\(\\s*\"([^\"]+)\"");
  private static final Pattern TAG = Pattern.compile("\\.tags?\\s*\\(\\s*\"([^\"]+)\"");
  private static final Pattern RETRY_LITERAL = Pattern.compile("\"(retry\\.[a-z0-9_.]+)\"");
  private static final Pattern DOTTED_CONSTANT =
      Pattern.compile("static\\s+final\\s+String\\s+\\w+\\s*=\\s*\"([a-z][a-z0-9_]*(?:\\.[a-z0-9_]+)+)\"");
  private static final Pattern BACKTICKED = Pattern.compile("`([^`]+)`");

  private MetricNames() {}

  /** Name → the first source that uses it (relative to the repository). */
  static Map<String, String> inCode(Path repo) {
    Map<String, String> names = new TreeMap<>();
    try (Stream<Path> files = Files.walk(repo)) {
      for (Path f : files.filter(MetricNames::isMainJava).sorted().toList()) {
        String text = Files.readString(f);
        if (!text.contains("io.micrometer.core.instrument") && !text.contains("io.micrometer.observation")) {
          continue;
        }
        String where = repo.relativize(f).toString();
        for (Pattern p : List.of(BUILDER, CALL, OBSERVATION, TAG, RETRY_LITERAL, DOTTED_CONSTANT)) {
          Matcher m = p.matcher(text);
          while (m.find()) {
            names.putIfAbsent(m.group(1), where);
          }
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return names;
  }

  private static boolean isMainJava(Path f) {
    String s = f.toString().replace('\\', '/');
    return s.endsWith(".java") && s.contains("/src/main/java/") && !s.contains("/target/") && !s.contains("/.git/");
  }

  /** Every backticked word of the document: names, tags and keys as the tables write them. */
  static Set<String> mentioned(String markdown) {
    Set<String> out = new TreeSet<>();
    Matcher m = BACKTICKED.matcher(markdown);
    while (m.find()) {
      out.add(m.group(1));
    }
    return out;
  }

  /** The first column of every table row (the meter and observation names). */
  static Set<String> rowNames(String markdown) {
    Set<String> out = new TreeSet<>();
    for (String line : markdown.split("\n")) {
      if (line.startsWith("| `")) {
        Matcher m = BACKTICKED.matcher(line.substring(0, line.indexOf('|', 1)));
        if (m.find()) {
          out.add(m.group(1));
        }
      }
    }
    return out;
  }

  /** What is wrong: names in code the document does not mention, rows the code has no name for. */
  static List<String> problems(Path repo, String markdown) {
    List<String> problems = new ArrayList<>();
    Map<String, String> code = inCode(repo);
    Set<String> mentioned = mentioned(markdown);
    code.forEach((name, where) -> {
      if (!mentioned.contains(name)) {
        problems.add("`" + name + "` (" + where + ") is not in docs/METRICS.md");
      }
    });
    for (String row : rowNames(markdown)) {
      if (!code.containsKey(row)) {
        problems.add("docs/METRICS.md lists `" + row + "`, which no main source names");
      }
    }
    return problems;
  }
}
