package io.retrybudget.deploy;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/** Prometheus's binaries, from PATH; tests that need them are skipped, saying why, where absent. */
final class Promtool {
  private Promtool() {}

  static Path find(String name) {
    for (String dir : System.getenv().getOrDefault("PATH", "").split(java.io.File.pathSeparator)) {
      Path p = Path.of(dir, name);
      if (Files.isExecutable(p)) {
        return p;
      }
    }
    return null;
  }

  static Path require(String name) {
    Path p = find(name);
    Assumptions.assumeTrue(p != null, name + " not on PATH: skipped (install Debian's prometheus package; .ci/run does)");
    return p;
  }

  /** Runs a command; returns its output; fails the test on a non-zero exit. */
  static String run(Path dir, String... command) throws IOException, InterruptedException {
    List<String> cmd = new ArrayList<>(List.of(command));
    Process p = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!p.waitFor(120, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new AssertionError(cmd + " timed out: " + out);
    }
    if (p.exitValue() != 0) {
      throw new AssertionError(cmd + " exited " + p.exitValue() + ":\n" + out);
    }
    return out;
  }
}
