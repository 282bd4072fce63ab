package io.retrybudget.buildchecks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every published module's POM carries what Maven Central requires (name, description, url,
 * licenses, developers, scm), with the parent's inheritance applied; the BOM lists exactly the
 * published jars. The modules come from the root POM's {@code <modules>}: a module added there
 * without metadata fails here, unless it opts out of publishing with {@code publish.skip}.
 */
class PomMetadataTest {
  static Path repo() {
    return Path.of(System.getProperty("repo.root", "..")).toAbsolutePath().normalize();
  }

  @Test
  void everyPublishedModuleCarriesCentralsMetadata() {
    List<String> problems = PomMetadata.read(repo()).problems();
    assertTrue(problems.isEmpty(), "POM metadata missing:\n  " + String.join("\n  ", problems));
  }

  @Test
  void theLibrariesThemselvesArePublished() {
    List<String> published = PomMetadata.read(repo()).publishedJars().stream().map(PomMetadata.Pom::artifactId).toList();
    assertTrue(published.containsAll(List.of("retry-budget-client-sdk", "retry-budget-server-kit", "retry-budget-server-kit-vertx",
        "retry-budget-server-kit-servlet", "retry-budget-local-redis")), published.toString());
    for (String application : List.of("coordinator", "bench", "deploy", "retry-budget-cli", "retry-budget-build-checks",
        "retry-budget-server-kit-examples")) {
      assertFalse(published.contains(application), application + " is a program or a check, not a library");
    }
  }

  // a small repository of the same shape: the parent with Central's metadata, a BOM, and modules

  private static final String PARENT_METADATA = """
        <url>https://example.org/p</url>
        <licenses><license><name>Apache-2.0</name><url>https://www.apache.org/licenses/LICENSE-2.0</url></license></licenses>
        <developers><developer><name>Maintainers</name></developer></developers>
        <scm child.scm.connection.inherit.append.path="false" child.scm.developerConnection.inherit.append.path="false"
             child.scm.url.inherit.append.path="false">
          <connection>scm:git:https://example.org/p.git</connection>
          <developerConnection>scm:git:git@example.org:p.git</developerConnection>
          <url>https://example.org/p</url>
        </scm>
      """;

  private static final String RELEASE_PROFILE = "<profiles><profile><id>release</id><build><plugins>"
      + "<plugin><artifactId>maven-gpg-plugin</artifactId></plugin>"
      + "<plugin><artifactId>central-publishing-maven-plugin</artifactId></plugin></plugins></build></profile></profiles>";

  private static void write(Path file, String text) throws IOException {
    Files.createDirectories(file.getParent());
    Files.writeString(file, text);
  }

  private static Path repoWith(Path dir, String rootAttributes, String modules, String bomDeps) throws IOException {
    write(dir.resolve("pom.xml"), "<project " + rootAttributes + "><groupId>g</groupId><artifactId>parent</artifactId>"
        + "<packaging>pom</packaging><name>P</name><description>the parent</description>" + PARENT_METADATA
        + "<modules>" + modules + "<module>bom</module></modules></project>");
    write(dir.resolve("bom/pom.xml"), "<project><groupId>g</groupId><artifactId>p-bom</artifactId><packaging>pom</packaging>"
        + "<name>BOM</name><description>versions</description>" + PARENT_METADATA.replace(" child.", " x.")
        + RELEASE_PROFILE + "<dependencyManagement><dependencies>" + bomDeps + "</dependencies></dependencyManagement></project>");
    return dir;
  }

  private static void module(Path repo, String dir, String inner) throws IOException {
    write(repo.resolve(dir).resolve("pom.xml"), "<project><parent><groupId>g</groupId><artifactId>parent</artifactId>"
        + "</parent><artifactId>" + dir + "</artifactId>" + inner + "</project>");
  }

  private static final String MODULE_NAME = "<properties><automatic.module.name>io.retrybudget.good</automatic.module.name></properties>";

  private static String bomEntry(String artifactId) {
    return "<dependency><groupId>g</groupId><artifactId>" + artifactId + "</artifactId></dependency>";
  }

  @Test
  void aNewModuleWithoutMetadataIsNamedWithEachMissingField(@TempDir Path dir) throws IOException {
    Path repo = repoWith(dir, "child.project.url.inherit.append.path=\"false\"",
        "<module>good</module><module>reactor</module>", bomEntry("good") + bomEntry("reactor"));
    module(repo, "good", "<name>Good</name><description>does things</description>" + MODULE_NAME);
    module(repo, "reactor", "<properties><automatic.module.name>io.retrybudget.good</automatic.module.name></properties>");
    assertEquals(List.of(
        "reactor (reactor/pom.xml): no <name> (its own: Maven does not inherit it meaningfully)",
        "reactor (reactor/pom.xml): no <description> (its own: Maven does not inherit it meaningfully)",
        "reactor (reactor/pom.xml): automatic.module.name io.retrybudget.good is taken"),
        PomMetadata.read(repo).problems());
  }

  @Test
  void aModuleThatOptsOutOfPublishingNeedsNoMetadataNorABomEntry(@TempDir Path dir) throws IOException {
    Path repo = repoWith(dir, "child.project.url.inherit.append.path=\"false\"", "<module>app</module>", "");
    module(repo, "app", "<properties><publish.skip>true</publish.skip></properties>");
    assertEquals(List.of(), PomMetadata.read(repo).problems());
  }

  @Test
  void aPublishedModuleMissingFromTheBomAndAStaleEntryAreNamed(@TempDir Path dir) throws IOException {
    Path repo = repoWith(dir, "child.project.url.inherit.append.path=\"false\"", "<module>lib</module>", bomEntry("old-name"));
    module(repo, "lib", "<name>Lib</name><description>a library</description>" + MODULE_NAME);
    assertEquals(List.of(
        "p-bom (bom/pom.xml): does not list the published module lib",
        "p-bom (bom/pom.xml): lists old-name, which no published module of this build is"),
        PomMetadata.read(repo).problems());
  }

  @Test
  void anInheritedUrlThatMavenWouldExtendWithTheArtifactIdIsNamed(@TempDir Path dir) throws IOException {
    Path repo = repoWith(dir, "", "<module>lib</module>", bomEntry("lib"));
    module(repo, "lib", "<name>Lib</name><description>a library</description>");
    assertEquals(List.of("lib (lib/pom.xml): <url> inherited from parent with its artifactId appended"
        + " (set child.project.url.inherit.append.path=\"false\" there)",
        "lib (lib/pom.xml): no <automatic.module.name> property of its own (its jar's Automatic-Module-Name)"),
        PomMetadata.read(repo).problems());
  }

  @Test
  void aBomWithoutAParentNeedsItsOwnMetadataAndSigning(@TempDir Path dir) throws IOException {
    Path repo = repoWith(dir, "child.project.url.inherit.append.path=\"false\"", "", "");
    String bom = Files.readString(repo.resolve("bom/pom.xml"));
    write(repo.resolve("bom/pom.xml"), bom.replaceAll("(?s)<licenses>.*</licenses>", "").replaceAll("(?s)<scm .*</scm>", "")
        .replace("<artifactId>maven-gpg-plugin</artifactId>", ""));
    assertEquals(List.of(
        "p-bom (bom/pom.xml): has no parent, so its own <profile> release needs maven-gpg-plugin",
        "p-bom (bom/pom.xml): no <licenses><license> with <name> and <url>",
        "p-bom (bom/pom.xml): no <scm/connection>",
        "p-bom (bom/pom.xml): no <scm/developerConnection>",
        "p-bom (bom/pom.xml): no <scm/url>"), PomMetadata.read(repo).problems());
  }
}
