package io.retrybudget.spring;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.budget.RedisBudgetClient;
import io.retrybudget.testing.RedisClusterProcesses;
import io.retrybudget.testing.RedisServerProcess;
import java.io.IOException;
import java.io.OutputStream;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The test matrix as users build: {@code src/it/boot-sample}, an application whose poms use
 * {@code spring-boot-starter-parent} 4.0.7 with this starter and {@code spring-boot-starter-data-redis},
 * built by the repository's Maven wrapper twice in one run, once with Boot's managed Lettuce (6.8.x)
 * and once with {@code lettuce.version} set to the SDK's 7.x; each build runs the sample's own tests
 * against a real standalone Redis and a real 3-master Redis Cluster started here.
 *
 * <p>The starter and the SDK just built are laid out as a Maven repository in {@code target/}
 * (jars of their classes, their poms and the parent pom), the nested Maven's local repository;
 * everything else is read from the outer build's local repository as a read-only tail
 * ({@code maven.repo.local.tail}, Maven 3.9), so nothing is installed into it. The nested Maven is
 * offline when the outer one is.
 */
class BootSampleMatrixTest {
  private static final String GROUP_PATH = "io/retrybudget/";

  @Test
  void theSampleBuildsAndPassesOnBootsManagedLettuceAndTheSdksStandaloneAndCluster() throws Exception {
    Path module = Path.of("").toAbsolutePath();
    Path root = module.getParent();
    String version = System.getProperty("retrybudget.sample.version", "0.2.0-SNAPSHOT");
    Path repo = module.resolve("target/boot-sample-repo");
    Path sample = module.resolve("target/boot-sample");
    deleteTree(repo.resolve("io/retrybudget"));
    deleteTree(sample);
    copyTree(module.resolve("src/it/boot-sample"), sample);
    layOut(repo, "retry-budget-parent", version, root.resolve("pom.xml"), null);
    layOut(repo, "retry-budget-client-sdk", version, root.resolve("client-sdk/pom.xml"), classesOf(RedisBudgetClient.class));
    layOut(repo, "retry-budget-spring-boot", version, module.resolve("pom.xml"), classesOf(RetryBudgetAutoConfiguration.class));

    try (RedisServerProcess standalone = RedisServerProcess.start();
        RedisClusterProcesses cluster = RedisClusterProcesses.start(3)) {
      List<String> command = new ArrayList<>(List.of(root.resolve("mvnw").toString(), "-B", "-q",
          "-f", sample.resolve("pom.xml").toString(), "test",
          "-Dmaven.repo.local=" + repo,
          "-Dmaven.repo.local.tail=" + System.getProperty("retrybudget.sample.localRepository",
              System.getProperty("user.home") + "/.m2/repository"),
          "-Dretrybudget.version=" + version,
          "-Dsample.redis.url=" + standalone.uri(),
          "-Dsample.redis.cluster-nodes=" + String.join(",", cluster.nodes())));
      if (System.getProperty("retrybudget.sample.offline", "offline=true").endsWith("true")) {
        command.add("-o");
      }
      Path log = module.resolve("target/boot-sample.log");
      Process maven = new ProcessBuilder(command).directory(sample.toFile()).redirectErrorStream(true)
          .redirectOutput(log.toFile()).start();
      // bounded: a hung nested build fails this test instead of the whole run
      boolean done = maven.waitFor(6, TimeUnit.MINUTES);
      if (!done) {
        maven.destroyForcibly();
      }
      String output = Files.readString(log);
      assertTrue(done && maven.exitValue() == 0, "nested build " + (done ? "exit " + maven.exitValue() : "timed out")
          + ":\n" + output.substring(Math.max(0, output.length() - 6000)));
    }
    for (String cell : List.of("boot-managed-lettuce", "sdk-lettuce")) {
      String report = Files.readString(sample.resolve(cell + "/target/surefire-reports/TEST-sample.SampleApplicationTest.xml"));
      Matcher m = Pattern.compile("tests=\"(\\d+)\" errors=\"(\\d+)\" skipped=\"(\\d+)\" failures=\"(\\d+)\"").matcher(report);
      assertTrue(m.find(), cell + ": no surefire summary");
      assertEquals("2 0 0 0", m.group(1) + " " + m.group(2) + " " + m.group(3) + " " + m.group(4),
          cell + ": tests errors skipped failures (standalone and Cluster, none skipped)");
    }
  }

  /** The directory or jar a class was loaded from. */
  private static Path classesOf(Class<?> type) throws URISyntaxException {
    return Path.of(type.getProtectionDomain().getCodeSource().getLocation().toURI());
  }

  /** {@code groupId/artifactId/version/artifactId-version.{pom,jar}} in a Maven repository layout. */
  private static void layOut(Path repo, String artifact, String version, Path pom, Path classes) throws IOException {
    Path dir = repo.resolve(GROUP_PATH + artifact + "/" + version);
    Files.createDirectories(dir);
    Files.copy(pom, dir.resolve(artifact + "-" + version + ".pom"), StandardCopyOption.REPLACE_EXISTING);
    if (classes == null) {
      return;
    }
    Path jar = dir.resolve(artifact + "-" + version + ".jar");
    if (Files.isRegularFile(classes)) {
      Files.copy(classes, jar, StandardCopyOption.REPLACE_EXISTING);
      return;
    }
    Manifest manifest = new Manifest();
    manifest.getMainAttributes().putValue("Manifest-Version", "1.0");
    try (OutputStream out = Files.newOutputStream(jar); JarOutputStream zip = new JarOutputStream(out, manifest);
        Stream<Path> files = Files.walk(classes)) {
      for (Path file : (Iterable<Path>) files.filter(Files::isRegularFile).sorted()::iterator) {
        String name = classes.relativize(file).toString().replace('\\', '/');
        if (name.equals("META-INF/MANIFEST.MF")) {
          continue;
        }
        zip.putNextEntry(new JarEntry(name));
        Files.copy(file, zip);
        zip.closeEntry();
      }
    }
  }

  private static void copyTree(Path from, Path to) throws IOException {
    try (Stream<Path> files = Files.walk(from)) {
      for (Path p : (Iterable<Path>) files::iterator) {
        Path target = to.resolve(from.relativize(p).toString());
        if (Files.isDirectory(p)) {
          Files.createDirectories(target);
        } else {
          Files.copy(p, target, StandardCopyOption.REPLACE_EXISTING);
        }
      }
    }
  }

  private static void deleteTree(Path dir) throws IOException {
    if (!Files.exists(dir)) {
      return;
    }
    try (Stream<Path> files = Files.walk(dir)) {
      for (Path p : (Iterable<Path>) files.sorted(java.util.Comparator.reverseOrder())::iterator) {
        Files.delete(p);
      }
    }
  }
}
