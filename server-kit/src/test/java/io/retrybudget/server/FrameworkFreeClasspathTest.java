package io.retrybudget.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.File;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import org.junit.jupiter.api.Test;

/**
 * server-kit stays framework-free: no Vert.x and no Servlet API anywhere on its classpath (compile,
 * runtime, optional, provided and test scopes together, which surefire runs these tests with), so
 * a servlet application never gets Vert.x through it and a Vert.x one never gets the Servlet API.
 * The adapters are retry-budget-server-kit-vertx and retry-budget-server-kit-servlet; a test that
 * needs a framework lives there.
 */
class FrameworkFreeClasspathTest {
  private static final List<String> FRAMEWORK_CLASSES = List.of(
      "io.vertx.core.Vertx", "io.vertx.core.Future", "io.vertx.ext.web.Router",
      "jakarta.servlet.Filter", "jakarta.servlet.http.HttpServletRequest", "javax.servlet.Filter");

  /** The classpath entries that belong to Vert.x or to a Servlet API (by their Maven path or jar name). */
  static List<String> frameworkEntries(String classpath) {
    return Arrays.stream(classpath.split(File.pathSeparator)).filter(entry -> {
      String path = entry.replace('\\', '/').toLowerCase(Locale.ROOT);
      String name = path.substring(path.lastIndexOf('/') + 1);
      return path.contains("/io/vertx/") || path.contains("/jakarta/servlet/") || path.contains("/javax/servlet/")
          || name.startsWith("vertx-") || name.contains("servlet-api");
    }).toList();
  }

  @Test
  void noVertxAndNoServletApiOnTheClasspath() {
    String classpath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
    assertEquals(List.of(), frameworkEntries(classpath), "server-kit's dependency tree must stay framework-free");
    ClassLoader loader = FrameworkFreeClasspathTest.class.getClassLoader();
    for (String name : FRAMEWORK_CLASSES) {
      assertThrows(ClassNotFoundException.class, () -> Class.forName(name, false, loader),
          name + " is loadable: a dependency brings it (Tomcat and Jetty carry the Servlet API in their own jars)");
    }
  }

  @Test
  void theCheckNamesEveryFrameworkJarAndNothingElse() {
    String repo = "/home/u/.m2/repository/";
    String classpath = String.join(File.pathSeparator,
        repo + "io/vertx/vertx-core/5.0.7/vertx-core-5.0.7.jar",
        repo + "io/retrybudget/retry-budget-client-sdk/0.2.0/retry-budget-client-sdk-0.2.0.jar",
        repo + "jakarta/servlet/jakarta.servlet-api/6.1.0/jakarta.servlet-api-6.1.0.jar",
        "/work/server-kit/target/classes",
        "/lib/vertx-web-5.0.7.jar",
        repo + "io/netty/netty-common/4.2.7.Final/netty-common-4.2.7.Final.jar");
    assertEquals(List.of(repo + "io/vertx/vertx-core/5.0.7/vertx-core-5.0.7.jar",
        repo + "jakarta/servlet/jakarta.servlet-api/6.1.0/jakarta.servlet-api-6.1.0.jar", "/lib/vertx-web-5.0.7.jar"),
        frameworkEntries(classpath));
  }
}
