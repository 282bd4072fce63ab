package io.retrybudget.buildchecks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** docs/METRICS.md lists every metric name, observation name and tag key the code uses, and no other name. */
class MetricsTableTest {
  @Test
  void theTableListsEveryNameInTheCode() throws IOException {
    Path repo = PomMetadataTest.repo();
    List<String> problems = MetricNames.problems(repo, Files.readString(repo.resolve("docs/METRICS.md")));
    assertTrue(problems.isEmpty(), "docs/METRICS.md and the code disagree:\n  " + String.join("\n  ", problems));
  }

  @Test
  void theScanFindsTheNamesOfEveryModuleThatHasMeters() {
    Map<String, String> code = MetricNames.inCode(PomMetadataTest.repo());
    // one name of each family, so a scan that finds nothing cannot pass the test above
    for (String name : List.of("retry.calls", "retry.budget.available", "retry.budget.remaining",
        "retry.budget.http.connections.closed", "retry.server.queue.sojourn", "retry.call", "http.request.resend_count")) {
      assertTrue(code.containsKey(name), name + " found in " + code.keySet());
    }
  }

  /** A small repository: a new meter the table lacks, and a row no code names, are both reported. */
  @Test
  void aNameMissingFromTheTableAndARowWithoutCodeAreReported(@TempDir Path repo) throws IOException {
    Path source = repo.resolve("mod/src/main/java/x/Meters.java");
    Files.createDirectories(source.getParent());
    Files.writeString(source, """
        package x;
        import io.micrometer.core.instrument.Counter;
        class Meters {
          static final String NAME = "retry.via.constant";
          static final String KEY = "http.other.key";
          void register(io.micrometer.core.instrument.MeterRegistry r) {
            Counter.builder("retry.new.thing").tag("shard", "a").register(r);
            Counter.builder("other.name").register(r);
            r.timer(NAME);
          }
        }
        """);
    Path ignored = repo.resolve("mod/src/test/java/x/MetersTest.java");
    Files.createDirectories(ignored.getParent());
    Files.writeString(ignored, "import io.micrometer.core.instrument.Counter; class T { String n = \"retry.only.in.tests\"; }");
    String table = """
        | name | type |
        |---|---|
        | `retry.new.thing` | counter, tag `shard` |
        | `retry.gone` | counter |
        """;
    assertEquals(List.of(
        "`http.other.key` (mod/src/main/java/x/Meters.java) is not in docs/METRICS.md",
        "`other.name` (mod/src/main/java/x/Meters.java) is not in docs/METRICS.md",
        "`retry.via.constant` (mod/src/main/java/x/Meters.java) is not in docs/METRICS.md",
        "docs/METRICS.md lists `retry.gone`, which no main source names"), MetricNames.problems(repo, table));
  }
}
