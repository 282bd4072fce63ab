package io.retrybudget.buildchecks;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Every published library's public API (its compiled classes, as {@link ApiDump} renders them)
 * equals its committed dump {@code <module>/api/<artifactId>.api}. A declaration in the dump that
 * the classes lack is a removal or an incompatible change: it fails the build until the dump is
 * rewritten ({@value #UPDATE}) and CHANGELOG.md says so under "Breaking". A new declaration fails
 * too, until it is recorded, so that it is protected from then on. docs/RELEASING.md says more.
 */
class ApiCompatibilityTest {
  static final String UPDATE = "./mvnw -B -pl build-checks -am verify -Dtest=ApiCompatibilityTest "
      + "-Dsurefire.failIfNoSpecifiedTests=false -Dapi.update";

  @Test
  void everyLibrarysApiEqualsItsCommittedDump() throws IOException {
    PomMetadata build = PomMetadata.read(PomMetadataTest.repo());
    Set<String> compiledFirst = build.dependencies(build.poms().stream()
        .filter(p -> p.artifactId().equals("retry-budget-build-checks")).findFirst().orElseThrow());
    boolean update = Boolean.getBoolean("api.update");
    List<String> failures = new ArrayList<>();
    for (PomMetadata.Pom pom : build.publishedJars()) {
      String module = pom.artifactId();
      if (!compiledFirst.contains(module)) {
        failures.add(module + ": published, but build-checks/pom.xml does not depend on it: add it there"
            + " (test scope), so that the reactor compiles it before this check reads its classes");
        continue;
      }
      Path dir = build.repo().resolve(pom.dir());
      Path classes = dir.resolve("target/classes");
      if (!Files.isDirectory(classes)) {
        failures.add(module + ": no " + pom.dir() + "/target/classes: build with -am");
        continue;
      }
      String actual = ApiDump.dump(classes);
      Path dumpFile = dir.resolve("api").resolve(module + ".api");
      if (update) {
        String before = Files.exists(dumpFile) ? Files.readString(dumpFile) : "";
        Files.createDirectories(dumpFile.getParent());
        Files.writeString(dumpFile, actual);
        List<String> removed = ApiDump.missing(before, actual);
        if (!removed.isEmpty()) {
          System.out.println(module + ": " + removed.size() + " declarations removed or changed: "
              + "add a line under \"Breaking\" in CHANGELOG.md\n  " + String.join("\n  ", removed));
        }
        continue;
      }
      if (!Files.exists(dumpFile)) {
        failures.add(module + ": no API dump " + pom.dir() + "/api/" + module + ".api: create it with " + UPDATE);
        continue;
      }
      String expected = Files.readString(dumpFile);
      List<String> removed = ApiDump.missing(expected, actual);
      List<String> added = ApiDump.missing(actual, expected);
      if (!removed.isEmpty() || !added.isEmpty()) {
        StringBuilder f = new StringBuilder(module + ": the public API differs from " + pom.dir() + "/api/" + module + ".api");
        if (!removed.isEmpty()) {
          f.append("\n  BREAKING, removed or changed (in the dump, not in the classes):\n    - ")
              .append(String.join("\n    - ", removed));
        }
        if (!added.isEmpty()) {
          f.append("\n  added (in the classes, not in the dump):\n    + ").append(String.join("\n    + ", added));
        }
        f.append("\n  If intended: ").append(UPDATE).append(", commit the .api file")
            .append(removed.isEmpty() ? "" : ", and add a line under \"Breaking\" in CHANGELOG.md");
        failures.add(f.toString());
      }
    }
    assertTrue(failures.isEmpty(), String.join("\n", failures));
  }
}
