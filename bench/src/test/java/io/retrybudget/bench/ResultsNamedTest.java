package io.retrybudget.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * bench/results/ keeps only what bench/README.md names, in one folder per benchmark: a file left
 * behind by a run nobody documents fails the build, so the folder stays a reference and history
 * stays in git.
 *
 * <p>A file is named when the README mentions its name, or a pattern that matches it: a stem
 * followed by {@code *} ({@code storm19-lag-*}) or by a {@code {a,b}} group
 * ({@code wrk-sweep-{3,4,5}.txt}), or {@code <...>} placeholders ({@code storm19-<clients>-r2.png}).
 */
class ResultsNamedTest {

  static final Path BENCH = Path.of(System.getProperty("user.dir"));

  @Test
  void everyFileUnderResultsIsNamedByTheReadme() throws IOException {
    String readme = Files.readString(BENCH.resolve("README.md"));
    List<Pattern> patterns = patterns(readme);
    Path results = BENCH.resolve("results");
    List<String> unnamed;
    try (Stream<Path> files = Files.walk(results)) {
      List<String> ignored = ignoredFolders(results);
      unnamed = files.filter(Files::isRegularFile)
          .map(f -> results.relativize(f).toString().replace('\\', '/'))
          .filter(rel -> ignored.stream().noneMatch(rel::startsWith))
          .filter(rel -> !named(rel, readme, patterns))
          .sorted()
          .collect(Collectors.toList());
    }
    assertEquals(List.of(), unnamed,
        "files in bench/results/ that bench/README.md does not name: name them there or delete them");
  }

  @Test
  void patternsMatchWhatTheyDescribe() {
    List<Pattern> p = patterns("`storm19-<clients>-r2{-summary.md,.png}` and `herd-30runs-*` and `wrk-sweep-{3,4,5}.txt`");
    String readme = "";
    assertEquals(true, named("storm-scale/storm19-1000-r2.png", readme, p));
    assertEquals(true, named("storm-scale/storm19-1000-r2-summary.md", readme, p));
    assertEquals(false, named("storm-scale/storm19-1000-r2-old.csv", readme, p));
    assertEquals(true, named("herd/herd-30runs-summary.txt", readme, p));
    assertEquals(true, named("coordinator-http/wrk-sweep-4.txt", readme, p));
    assertEquals(false, named("coordinator-http/wrk-sweep-2.txt", readme, p));
    assertEquals(true, named("x/exact.txt", "see `exact.txt`", p));
  }

  static boolean named(String rel, String readme, List<Pattern> patterns) {
    String name = rel.substring(rel.lastIndexOf('/') + 1);
    if (readme.contains(rel) || readme.contains(name)) {
      return true;
    }
    return patterns.stream().anyMatch(p -> p.matcher(rel).matches() || p.matcher(name).matches());
  }

  /** Every code span of the README that holds {@code *}, {@code {}} or {@code <>}, as a regex. */
  static List<Pattern> patterns(String readme) {
    Matcher spans = Pattern.compile("`([^`\\s]+)`").matcher(readme);
    List<Pattern> out = new java.util.ArrayList<>();
    while (spans.find()) {
      String span = spans.group(1);
      if (span.contains("*") || span.contains("{") || span.contains("<")) {
        out.add(Pattern.compile(glob(span)));
      }
    }
    return out;
  }

  static String glob(String span) {
    StringBuilder re = new StringBuilder();
    boolean inGroup = false;
    for (int i = 0; i < span.length(); i++) {
      char c = span.charAt(i);
      switch (c) {
        case '*' -> re.append("[^/]*");
        case '<' -> {
          int end = span.indexOf('>', i);
          if (end < 0) {
            re.append(Pattern.quote("<"));
          } else {
            re.append("[^/]+?");
            i = end;
          }
        }
        case '{' -> {
          re.append("(?:");
          inGroup = true;
        }
        case '}' -> {
          re.append(")");
          inGroup = false;
        }
        case ',' -> re.append(inGroup ? "|" : Pattern.quote(","));
        default -> re.append(Pattern.quote(String.valueOf(c)));
      }
    }
    return re.toString();
  }

  /**
   * Folders a {@code .gitignore} under results/ names (lines like {@code logs/}): what a local run
   * leaves there is never committed, so a clean clone has none of it.
   */
  static List<String> ignoredFolders(Path results) throws IOException {
    try (Stream<Path> files = Files.walk(results)) {
      List<String> folders = new java.util.ArrayList<>();
      for (Path ignore : files.filter(f -> f.getFileName().toString().equals(".gitignore")).collect(Collectors.toList())) {
        String dir = results.relativize(ignore.getParent()).toString().replace('\\', '/');
        for (String line : Files.readAllLines(ignore)) {
          String entry = line.strip();
          if (entry.endsWith("/") && !entry.startsWith("#") && !entry.contains("*")) {
            folders.add((dir.isEmpty() ? "" : dir + "/") + entry.replaceFirst("^/", ""));
          }
        }
      }
      return folders;
    }
  }
}
