package io.retrybudget.coordinator.http;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Vert.x internals stay in {@link VertxInternals}: no other main source file names an {@code impl} or
 * {@code internal} package of Vert.x, {@code VertxInternal}, or the pipeline's handler names; the
 * start-up self-test passes on the Vert.x of this build and fails with a message naming the version.
 */
class VertxInternalsTest {
  /** Vert.x internals, and any library's package named impl or internal (the SDK's own too: not API). */
  private static final Pattern INTERNAL = Pattern.compile(
      "io\\.vertx\\.[\\w.]*\\.(impl|internal)\\b|\\bVertxInternal\\b|\"httpDecoder\"|\"handler\""
          + "|import (static )?[\\w.]*\\.(impl|internal)\\.");

  @Test
  void noClassButVertxInternalsUsesVertxInternals() throws IOException {
    Path main = Path.of("src", "main", "java");
    assertTrue(Files.isDirectory(main), "run from the coordinator module: " + main.toAbsolutePath());
    List<String> found = new ArrayList<>();
    int scanned;
    try (Stream<Path> files = Files.walk(main)) {
      List<Path> java = files.filter(p -> p.toString().endsWith(".java")).toList();
      scanned = java.size();
      for (Path p : java) {
        if (p.getFileName().toString().equals("VertxInternals.java")) {
          continue;
        }
        List<String> lines = Files.readAllLines(p);
        for (int i = 0; i < lines.size(); i++) {
          if (INTERNAL.matcher(lines.get(i)).find()) {
            found.add(main.relativize(p) + ":" + (i + 1) + ": " + lines.get(i).trim());
          }
        }
      }
    }
    assertTrue(scanned > 20, "scanned only " + scanned + " files");
    assertEquals(List.of(), found, "internals (Vert.x's or any impl/internal package) outside VertxInternals");
  }

  @Test
  void theScanSeesAnInternalImport() {
    // the pattern the scan applies, on the lines it must catch and one it must not
    assertTrue(INTERNAL.matcher("import io.vertx.core.http.impl.VertxHttpRequestDecoder;").find());
    assertTrue(INTERNAL.matcher("import io.vertx.core.internal.VertxInternal;").find());
    assertTrue(INTERNAL.matcher("p.get(\"httpDecoder\")").find());
    assertTrue(INTERNAL.matcher("import io.retrybudget.budget.internal.PaceArithmetic;").find());
    assertTrue(INTERNAL.matcher("import static io.netty.util.internal.ObjectUtil.checkNotNull;").find());
    assertTrue(!INTERNAL.matcher("import io.vertx.core.http.HttpServerOptions;").find());
    assertTrue(!INTERNAL.matcher("import io.retrybudget.budget.redis.protocol.StatusReply;").find());
  }

  @Test
  void theSelfTestPassesOnThisVertx() {
    assertDoesNotThrow(PipelineSelfTest::run);
    assertTrue(VertxInternals.version().startsWith("5."), VertxInternals.version());
  }

  @Test
  void anUnexpectedPipelineFailsNamingTheVertxVersion() {
    List<String> renamed = List.of("rb-raw", "codec", "vertx-handler", "DefaultChannelPipeline$TailContext#0");
    IllegalStateException e = assertThrows(IllegalStateException.class,
        () -> VertxInternals.checkPipeline(renamed, "5.9.0"));
    assertEquals("Vert.x 5.9.0 builds the HTTP/1.x pipeline " + renamed + ", without handlers named 'httpDecoder' and "
        + "'handler' (as Vert.x " + VertxInternals.TESTED_WITH + " names them): the coordinator's connection guard "
        + "cannot install its strict decoder and gate, and would close every connection; run it with Vert.x "
        + VertxInternals.TESTED_WITH + " or update io.retrybudget.coordinator.http.VertxInternals", e.getMessage());
    // one of the two missing is enough
    assertThrows(IllegalStateException.class,
        () -> VertxInternals.checkPipeline(List.of("httpDecoder", "vertx-handler"), "5.9.0"));
    assertDoesNotThrow(() -> VertxInternals.checkPipeline(List.of("rb-raw", "httpDecoder", "httpEncoder", "handler"), "5.0.7"));
  }
}
