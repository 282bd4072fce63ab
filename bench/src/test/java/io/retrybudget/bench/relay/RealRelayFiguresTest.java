package io.retrybudget.bench.relay;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** The real relay run's own arithmetic: the latency histogram and Redis's count lag. */
class RealRelayFiguresTest {
  @Test
  void percentilesReadTheBucketsUpperBoundAndNeverUnderstate() {
    LatencyHistogram h = new LatencyHistogram();
    for (int i = 0; i < 98; i++) {
      h.record(3);
    }
    h.record(1_234); // a 100 µs bucket: 1,200..1,299
    h.record(250_000); // a 10 ms bucket: 250,000..259,999
    assertEquals(100, h.total());
    assertEquals(3, h.percentile(0.5));
    assertEquals(1_299, h.percentile(0.99));
    assertEquals(259_999, h.percentile(1.0));
    h.record(-5);
    h.record(60_000_000);
    assertEquals(0, LatencyHistogram.bucket(-5));
    assertEquals(LatencyHistogram.BUCKETS - 1, LatencyHistogram.bucket(60_000_000));
    assertEquals(10_000_000, h.percentile(1.0), "above 10 s: the overflow bucket");
    for (long v : new long[] {0, 999, 1_000, 99_999, 100_000, 9_999_999}) {
      int b = LatencyHistogram.bucket(v);
      assertEquals(true, LatencyHistogram.upperMicros(b) >= v && (b == 0 || LatencyHistogram.upperMicros(b - 1) < v),
          "bucket of " + v);
    }
  }

  @Test
  void histogramsSurviveTheirCsvField() {
    LatencyHistogram a = new LatencyHistogram();
    a.record(7);
    a.record(7);
    a.record(5_000);
    LatencyHistogram b = new LatencyHistogram();
    b.decodeInto(a.encode());
    b.decodeInto(a.encode());
    b.decodeInto("");
    assertEquals(6, b.total());
    assertEquals(4, b.count(7));
    assertEquals(5_099, b.percentile(1.0));
  }

  @Test
  void lagIsTheTimeSinceTheFleetHadMadeWhatRedisCounted() {
    long[] made = new long[200]; // 10 first attempts every 10 ms: 1,000 a second
    for (int i = 0; i < made.length; i++) {
      made[i] = 10L * (i + 1);
    }
    // read at 1,500 ms; Redis had counted 1,000, which the fleet had made by slot 99 (990 ms)
    assertEquals(0.51, RealRelayRun.lagSeconds(made, 1_500, 1_000), 1e-9);
    assertEquals(0.0, RealRelayRun.lagSeconds(made, 1_500, 1_510), "all counted");
    assertEquals(0.0, RealRelayRun.lagSeconds(made, 1_500, 2_000), "counted more than made: no lag");
    assertEquals(1.5, RealRelayRun.lagSeconds(made, 1_500, 0), 1e-9);
    assertEquals(0.0, RealRelayRun.lagSeconds(new long[0], 1_500, 0));
  }

  /** A direct run of 1,000 clients, 6 recorded seconds (2 healthy, 3 of outage, 1 after), all issued as scheduled. */
  private static RealRelayRun sixSeconds() {
    RealRelayOptions o = RealRelayOptions.parse(new String[] {"--clients", "1000", "--designs", "direct",
        "--healthy", "2", "--outage", "3", "--after", "1"});
    RealRelayRun r = new RealRelayRun(o, "direct");
    java.util.Arrays.fill(r.scheduled, 2_000);
    java.util.Arrays.fill(r.issued, 2_000);
    return r;
  }

  @Test
  void theSummaryJudgesEveryTargetFromTheSeconds() {
    RealRelayRun r = sixSeconds();
    for (int s = 0; s < 6; s++) {
      r.redisCalls[s] = 1_000 + s;
      r.lagSeconds[s] = 0.1 * s;
    }
    r.issued[5] = 1_900; // the harness fell 5 % behind in the last second
    long[] grants = {200, 300, 280};
    for (int s = 2; s < 5; s++) {
      r.grants[s] = grants[s - 2];
      r.denied[s] = 1_000;
      r.latency[s].record(5);
      r.latency[s].record(5);
    }
    r.latency[4].record(3_000);
    r.fallback[4] = 30;
    RealRelaySummary sum = RealRelaySummary.of(r);
    assertEquals(0.10, sum.ratioMin(), 1e-9);
    assertEquals(0.15, sum.ratioMax(), 1e-9);
    assertEquals(0.13, sum.ratioMean(), 1e-9);
    assertEquals(0.13 - 10 / 2_000.0, sum.ratioMeanAfterFloor(), 1e-9);
    assertEquals(1_000.5, sum.callsHealthy(), 1e-9);
    assertEquals(1_005, sum.callsMax());
    assertEquals(0.5, sum.lagMax(), 1e-9);
    assertEquals(7, sum.decisions());
    assertEquals(5, sum.p50Micros());
    assertEquals(3_099, sum.p99Micros());
    assertEquals(false, sum.p99UnderAMillisecond());
    assertEquals(false, sum.meanInBand(), "0.125 after the floor");
    assertEquals(0.95, sum.paceMin(), 1e-9);
    assertEquals(false, sum.keptPace());
    assertEquals(30 / 3_780.0, sum.fallbackShare(), 1e-9);
    assertEquals(true, sum.decidedByTheTier());
    assertEquals(true, sum.row().contains("P99 OVER") && sum.row().contains("| NO (issued 0.950-1.000"), sum.row());
  }

  @Test
  void firstAttemptsNeverCountedAreToldApartFromTheDelay() {
    RealRelayRun r = sixSeconds();
    for (int s = 0; s < 6; s++) {
      r.lagSeconds[s] = 1.6 + 0.1 * (s % 2);
    }
    r.madeTotal = 100_000;
    r.countedAtEnd = 98_400; // 1,600 first attempts never counted: 0.8 s of a fleet making 2,000 a second
    RealRelaySummary sum = RealRelaySummary.of(r);
    assertEquals(1_600, sum.neverCounted());
    assertEquals(0.8, sum.neverCountedSeconds(), 1e-9);
    assertEquals(false, sum.lagUnderASecond());
    assertEquals(true, sum.delayUnderASecond(), "1.7 s at most, of which 0.8 s never counted");
    assertEquals(true, sum.row().contains("LAG OVER (ok less the 0.80 s never counted)"), sum.row());
    assertEquals(true, sum.costRow().contains("| 1,600 (of 100,000; 0.80 s) |"), sum.costRow());
    r.countedAtEnd = 100_000;
    assertEquals(true, RealRelaySummary.of(r).row().contains("LAG OVER, "), "nothing lost: nothing to tell apart");
  }

  @Test
  void aProfiledRunRecordsEveryChildJvmIntoAFileOfItsOwn() {
    RealRelayOptions plain = RealRelayOptions.parse(new String[] {"--designs", "direct"});
    assertEquals(java.util.List.of(), plain.profileOptions("direct", "client-0"), "no recorder unless asked for");
    RealRelayOptions profiled = RealRelayOptions.parse(new String[] {"--designs", "direct", "--profile-dir", "p"});
    assertEquals(java.util.List.of("-XX:StartFlightRecording=filename="
            + java.nio.file.Path.of("p").toAbsolutePath().resolve("relay-relay-2.jfr") + ",settings=profile,dumponexit=true"),
        profiled.profileOptions("relay", "relay-2"));
  }
}
