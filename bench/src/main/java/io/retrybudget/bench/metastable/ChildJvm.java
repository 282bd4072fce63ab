package io.retrybudget.bench.metastable;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * A child JVM of a real run on this JVM's class path: its stdout and stderr go to a log file (each
 * line after the seconds since the child was started), the
 * lines it announces itself with ({@code LOADED}, {@code READY}, {@code DONE}) are remembered, and
 * {@link #send} writes a line to its stdin.
 */
final class ChildJvm implements AutoCloseable {
  private final String name;
  private final Process process;
  private final Set<String> seen = ConcurrentHashMap.newKeySet();
  private final PrintWriter stdin;

  ChildJvm(String name, Path log, Class<?> main, List<String> args) throws IOException {
    this.name = name;
    List<String> cmd = new ArrayList<>();
    cmd.add(ProcessHandle.current().info().command().orElse("java"));
    // a fixed heap whose young generation holds a whole round's garbage: each round starts after a
    // System.gc(), so no collection pauses a JVM while the clock runs (a round allocates up to about
    // 1 GB in a client JVM: 17 MB/s in a storm, 10 MB/s on average). With 192 MB of young
    // generation, Serial's young pauses in a round's trigger took 144-591 ms of wall time at load 7-16
    // (15-35 MB copied, the collector waiting for a core), which alone made the run inconclusive.
    // Serial: on 2 cores shared by 4 busy JVMs, G1 (20 ms target) paused 250-320 ms, Parallel GC 1-4
    // s and Shenandoah (concurrent, its threads competing for the cores) left the tickers up to 479
    // ms late. Not pre-touched: touching 4 x 2 GB took about 25 s of the 5 minutes, and the first
    // round was late in its trigger with it as without it; a metaspace large
    // enough that loading the classes costs no full collection. -Dmetastable.gc=<flags,comma,separated>
    // replaces the collector's flags, to compare
    cmd.addAll(List.of(System.getProperty("metastable.gc",
        "-Xms2g,-Xmx2g,-Xmn1792m,-XX:SurvivorRatio=14,-XX:+UseSerialGC").split(",")));
    cmd.addAll(List.of("-XX:MetaspaceSize=128m", "-Xlog:gc:file=" + log + ".gc",
        "-Xss512k",
        "-Djava.awt.headless=true",
        // with the common pool's default parallelism of 1 (a 2-core machine) CompletableFuture runs async
        // stages on a new thread each, and java.net.http does so for every cancelled exchange
        "-Djava.util.concurrent.ForkJoinPool.common.parallelism=4", "-cp", System.getProperty("java.class.path"), main.getName()));
    cmd.addAll(args);
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
    long started = System.nanoTime();
    this.process = pb.start();
    this.stdin = new PrintWriter(process.getOutputStream(), true, StandardCharsets.UTF_8);
    Writer out = Files.newBufferedWriter(log);
    Thread reader = new Thread(() -> {
      try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
           Writer w = out) {
        for (String line; (line = r.readLine()) != null; ) {
          seen.add(line.trim());
          w.write(String.format(java.util.Locale.ROOT, "%7.1f ", (System.nanoTime() - started) / 1e9));
          w.write(line);
          w.write('\n');
          w.flush();
        }
      } catch (IOException e) {
        seen.add("IO-ERROR " + e);
      }
    }, name + "-out");
    reader.setDaemon(true);
    reader.start();
  }

  /** Waits until the child printed {@code line}; fails when it exits or the time runs out first. */
  void await(String line, long timeoutMillis) throws InterruptedException {
    long until = System.currentTimeMillis() + timeoutMillis;
    while (!seen.contains(line)) {
      if (!process.isAlive() && !seen.contains(line)) {
        throw new IllegalStateException(name + " exited with " + process.exitValue() + " before " + line
            + " (see its log)");
      }
      if (System.currentTimeMillis() > until) {
        throw new IllegalStateException(name + " did not print " + line + " in " + timeoutMillis + " ms (see its log)");
      }
      Thread.sleep(20);
    }
  }

  void send(String line) {
    stdin.println(line);
  }

  /** Waits for the child's exit; a child still running after {@code timeoutMillis} is destroyed. */
  int waitFor(long timeoutMillis) throws InterruptedException {
    if (!process.waitFor(timeoutMillis, TimeUnit.MILLISECONDS)) {
      process.destroyForcibly();
      throw new IllegalStateException(name + " still ran " + timeoutMillis + " ms after its end");
    }
    return process.exitValue();
  }

  @Override
  public void close() {
    if (process.isAlive()) {
      process.destroyForcibly();
    }
  }
}
