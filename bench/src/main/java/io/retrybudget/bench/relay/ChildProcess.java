package io.retrybudget.bench.relay;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * A process of the real relay run (a client JVM, a relay): its output goes to a log file, the lines it
 * printed are remembered (for {@link #await}), {@link #send} writes a line to its stdin, and its CPU
 * time is read from {@code /proc}.
 */
final class ChildProcess implements AutoCloseable {
  private final String name;
  private final Process process;
  private final Set<String> seen = ConcurrentHashMap.newKeySet();
  private final PrintWriter stdin;

  ChildProcess(String name, Path log, List<String> command, Map<String, String> env) throws IOException {
    this.name = name;
    ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true);
    pb.environment().putAll(env);
    this.process = pb.start();
    this.stdin = new PrintWriter(process.getOutputStream(), true, StandardCharsets.UTF_8);
    Writer out = Files.newBufferedWriter(log);
    Thread reader = new Thread(() -> {
      try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
           Writer w = out) {
        for (String line; (line = r.readLine()) != null; ) {
          seen.add(line.trim());
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

  /** A JVM on this JVM's class path running {@code main} with {@code args}. */
  static ChildProcess jvm(String name, Path log, List<String> jvmOptions, Class<?> main, List<String> args)
      throws IOException {
    List<String> cmd = new java.util.ArrayList<>();
    cmd.add(java());
    cmd.addAll(jvmOptions);
    cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), main.getName()));
    cmd.addAll(args);
    return new ChildProcess(name, log, cmd, Map.of());
  }

  /** The java launcher running this JVM. */
  static String java() {
    return ProcessHandle.current().info().command().orElse("java");
  }

  /** Waits until the process printed {@code line}; fails when it exits or the time runs out first. */
  void await(String line, long timeoutMillis) throws InterruptedException {
    long until = System.currentTimeMillis() + timeoutMillis;
    while (!seen.contains(line)) {
      if (!process.isAlive()) {
        throw new IllegalStateException(name + " exited with " + process.exitValue() + " before " + line + " (see its log)");
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

  long pid() {
    return process.pid();
  }

  /**
   * Waits until this process answers PING on {@code port} (a relay): true when it did, false when it
   * exited first; throws, naming {@code log}, when neither happened within {@code timeoutMillis}. Polls
   * every 100 ms of real time: the process is real.
   */
  boolean answersPing(int port, long timeoutMillis, Path log) throws InterruptedException {
    long until = System.currentTimeMillis() + timeoutMillis;
    while (true) {
      try (io.retrybudget.testing.RespClient c = new io.retrybudget.testing.RespClient("127.0.0.1", port, 500)) {
        if ("PONG".equals(c.call("PING"))) {
          return true;
        }
      } catch (IOException e) {
        if (!alive()) {
          return false;
        }
        if (System.currentTimeMillis() > until) {
          throw new IllegalStateException("no answer to PING on port " + port + " (see " + log + "): " + e);
        }
      }
      Thread.sleep(100);
    }
  }

  boolean alive() {
    return process.isAlive();
  }

  /** User + system CPU time of the process so far, ms (from {@code /proc/<pid>/stat}); -1 when gone. */
  long cpuMillis() {
    return cpuMillis(process.pid());
  }

  static long cpuMillis(long pid) {
    try {
      String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
      // the fields after the command name (in parentheses, which may hold spaces)
      String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
      long ticks = Long.parseLong(f[11]) + Long.parseLong(f[12]); // utime, stime (fields 14 and 15)
      return ticks * 1000 / CLOCK_TICKS;
    } catch (IOException | RuntimeException e) {
      return -1;
    }
  }

  /** USER_HZ: 100 on every Linux this runs on (getconf CLK_TCK). */
  private static final long CLOCK_TICKS = 100;

  /** Waits for the exit; a process still running after {@code timeoutMillis} is killed and that is an error. */
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
      process.destroy();
      try {
        if (!process.waitFor(5, TimeUnit.SECONDS)) {
          process.destroyForcibly();
        }
      } catch (InterruptedException e) {
        process.destroyForcibly();
        Thread.currentThread().interrupt();
      }
    }
  }
}
