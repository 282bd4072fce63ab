package io.retrybudget.bench.relay;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The chart's real points take each design's first attempts never counted from its run's summary. */
class CostCurveChartTest {
  @Test
  void theNeverCountedSecondsOfEachDesignComeFromItsCostRow(@TempDir Path dir) throws Exception {
    Path summary = dir.resolve("run-summary.md");
    Files.writeString(summary, String.join("\n",
        "# run: 20,000 clients in 4 JVMs, 4 relay processes, one redis-server, real time",
        "| clients | design | outage ratio min-max |",
        "| 20,000 | 4 relays | 0.096-0.133 |",
        "| design | decisions | ... | first attempts never counted (of made; as seconds of the fleet's rate) |",
        "| direct | 1,237,760 (0.000, 0) | 3.45 / 2.92 | 429 (of 4,399,825; 0.01 s) |",
        "| 4 relays | 1,311,781 (0.000, 0) | 2.68 / 8.14 | 74,627 (of 4,399,646; 1.87 s) |", ""));
    assertEquals(0.01, CostCurveChart.neverCountedSeconds(summary, "direct"), 1e-9);
    assertEquals(1.87, CostCurveChart.neverCountedSeconds(summary, "relays"), 1e-9);
    Files.writeString(summary, "# an older run\n| direct | 1 | 2 |\n");
    assertEquals(0, CostCurveChart.neverCountedSeconds(summary, "direct"), "a summary without the column");
    assertEquals(0, CostCurveChart.neverCountedSeconds(dir.resolve("missing.md"), "direct"));
  }
}
