package io.retrybudget.deploy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import javax.lang.model.SourceVersion;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.Node;
import org.w3c.dom.NodeList;

/**
 * The library modules (those whose pom sets {@code publish.skip} to false) are the ones a user
 * depends on: each is listed in retry-budget-bom and names a valid, unique Java module.
 */
class PublishedModulesTest {
  private static final Path REPO = DeployFiles.ROOT.getParent();

  private static Document pom(Path file) throws Exception {
    DocumentBuilderFactory factory = DocumentBuilderFactory.newInstance();
    factory.setNamespaceAware(false);
    return factory.newDocumentBuilder().parse(file.toFile());
  }

  private static List<Element> children(Node parent, String name) {
    List<Element> out = new ArrayList<>();
    NodeList nodes = parent.getChildNodes();
    for (int i = 0; i < nodes.getLength(); i++) {
      if (nodes.item(i) instanceof Element e && e.getTagName().equals(name)) {
        out.add(e);
      }
    }
    return out;
  }

  private static String property(Document pom, String name) {
    for (Element properties : children(pom.getDocumentElement(), "properties")) {
      for (Element p : children(properties, name)) {
        return p.getTextContent().trim();
      }
    }
    return null;
  }

  private static String artifactId(Document pom) {
    return children(pom.getDocumentElement(), "artifactId").get(0).getTextContent().trim();
  }

  /** Library modules of the reactor: artifactId to Automatic-Module-Name. */
  private static Map<String, String> libraries() throws Exception {
    Document root = pom(REPO.resolve("pom.xml"));
    Map<String, String> libraries = new TreeMap<>();
    for (Element modules : children(root.getDocumentElement(), "modules")) {
      for (Element module : children(modules, "module")) {
        Path file = REPO.resolve(module.getTextContent().trim()).resolve("pom.xml");
        assertTrue(Files.isRegularFile(file), file.toString());
        Document pom = pom(file);
        if ("false".equals(property(pom, "publish.skip"))) {
          libraries.put(artifactId(pom), property(pom, "automatic.module.name"));
        }
      }
    }
    return libraries;
  }

  @Test
  void everyLibraryModuleIsInTheBom() throws Exception {
    Map<String, String> libraries = libraries();
    assertTrue(libraries.keySet().containsAll(Set.of("client-sdk", "server-kit")), libraries.toString());
    Document bom = pom(REPO.resolve("retry-budget-bom/pom.xml"));
    Set<String> listed = new TreeSet<>();
    NodeList dependencies = bom.getElementsByTagName("dependency");
    for (int i = 0; i < dependencies.getLength(); i++) {
      Element dependency = (Element) dependencies.item(i);
      String group = children(dependency, "groupId").get(0).getTextContent().trim();
      String version = children(dependency, "version").get(0).getTextContent().trim();
      assertEquals("io.retrybudget", group);
      assertEquals("${project.version}", version);
      listed.add(children(dependency, "artifactId").get(0).getTextContent().trim());
    }
    assertEquals(libraries.keySet(), listed, "library modules vs retry-budget-bom/pom.xml");
  }

  @Test
  void everyLibraryModuleNamesAValidUniqueJavaModule() throws Exception {
    Set<String> seen = new HashSet<>();
    for (Map.Entry<String, String> library : libraries().entrySet()) {
      String name = library.getValue();
      assertTrue(name != null && SourceVersion.isName(name) && name.startsWith("io.retrybudget."),
          library.getKey() + ": automatic.module.name " + name);
      assertTrue(seen.add(name), library.getKey() + ": duplicate module name " + name);
    }
  }
}
