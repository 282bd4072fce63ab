package io.retrybudget.buildchecks;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import javax.lang.model.SourceVersion;
import javax.xml.parsers.DocumentBuilderFactory;
import org.w3c.dom.Element;
import org.w3c.dom.Node;

/**
 * The modules of the build as their POMs declare them, with what Maven Central requires of a
 * published one: name, description, url, licenses, developers and scm. The modules are the root
 * POM's {@code <modules>}, so a module added there is checked without anyone listing it here. A
 * module is published unless it sets {@code publish.skip} to true (itself or through its parent).
 *
 * <p>Inheritance is applied as Maven applies it: name and description are the module's own (an
 * inherited description would describe the parent); url, licenses, developers and each scm field
 * come from the parent when the module has none, and then only if the parent turns off Maven's
 * appending of the artifactId to them ({@code child.*.inherit.append.path="false"}), since an
 * appended URL points nowhere.
 */
public final class PomMetadata {
  private static final String[] SCM_FIELDS = {"connection", "developerConnection", "url"};

  /** One module's POM. */
  public record Pom(String dir, Element root, Pom parent) {
    public String artifactId() {
      return text(root, "artifactId").orElseThrow();
    }

    /** The directories its {@code <modules>} lists. */
    public List<String> modules() {
      return child(root, "modules").map(m -> children(m, "module").stream()
          .map(e -> e.getTextContent().trim()).toList()).orElse(List.of());
    }

    public String packaging() {
      return text(root, "packaging").orElse("jar");
    }

    /** A property as Maven resolves it through the parent chain, ignoring profiles. */
    public Optional<String> property(String name) {
      Optional<String> own = child(root, "properties").flatMap(p -> text(p, name));
      return own.isPresent() || parent == null ? own : parent.property(name);
    }

    public boolean published() {
      return !"true".equals(property("publish.skip").orElse("false").trim());
    }

    /** A jar others depend on (not a POM-only module). */
    public boolean publishedJar() {
      return published() && "jar".equals(packaging());
    }

    String label() {
      return artifactId() + " (" + (dir.isEmpty() ? "" : dir + "/") + "pom.xml)";
    }
  }

  private final Path repo;
  private final List<Pom> poms;

  private PomMetadata(Path repo, List<Pom> poms) {
    this.repo = repo;
    this.poms = poms;
  }

  /** Reads the root POM at {@code repo} and every module it lists. */
  public static PomMetadata read(Path repo) {
    Pom root = new Pom("", parse(repo.resolve("pom.xml")), null);
    List<Pom> poms = new ArrayList<>(List.of(root));
    for (String dir : root.modules()) {
      Element module = parse(repo.resolve(dir).resolve("pom.xml"));
      boolean inheritsRoot = child(module, "parent").flatMap(p -> text(p, "artifactId"))
          .filter(root.artifactId()::equals).isPresent();
      poms.add(new Pom(dir, module, inheritsRoot ? root : null));
    }
    return new PomMetadata(repo, poms);
  }

  public List<Pom> poms() {
    return poms;
  }

  /** The published jar modules, in the root POM's order. */
  public List<Pom> publishedJars() {
    return poms.stream().filter(Pom::publishedJar).toList();
  }

  /** Every missing field of every published module, each naming the module and the field; empty when all is well. */
  public List<String> problems() {
    List<String> problems = new ArrayList<>();
    Set<String> moduleNames = new TreeSet<>();
    for (Pom pom : poms) {
      if (pom.published()) {
        problems.addAll(missingFields(pom));
      }
      if (pom.publishedJar()) {
        moduleName(pom, moduleNames).ifPresent(problems::add);
      }
    }
    problems.addAll(bomProblems());
    return problems;
  }

  private static List<String> missingFields(Pom pom) {
    List<String> missing = new ArrayList<>();
    for (String own : List.of("name", "description")) {
      if (text(pom.root, own).filter(t -> !t.isBlank()).isEmpty()) {
        missing.add(pom.label() + ": no <" + own + "> (its own: Maven does not inherit it meaningfully)");
      }
    }
    if (pom.parent == null && !pom.dir.isEmpty()) {
      missing.addAll(releaseProfile(pom));
    }
    inherited(pom, "url", "child.project.url.inherit.append.path", p -> text(p.root, "url"), missing);
    if (list(pom, "licenses", "license").stream().noneMatch(l -> has(l, "name") && has(l, "url"))) {
      missing.add(pom.label() + ": no <licenses><license> with <name> and <url>");
    }
    if (list(pom, "developers", "developer").stream().noneMatch(d -> has(d, "name"))) {
      missing.add(pom.label() + ": no <developers><developer> with <name>");
    }
    for (String field : SCM_FIELDS) {
      inherited(pom, "scm/" + field, "child.scm." + field + ".inherit.append.path",
          p -> child(p.root, "scm").flatMap(s -> text(s, field)), missing);
    }
    return missing;
  }

  /** A published POM without the parent signs and stages itself: the parent's release profile does not reach it. */
  private static List<String> releaseProfile(Pom pom) {
    Set<String> plugins = new TreeSet<>();
    child(pom.root, "profiles").ifPresent(ps -> children(ps, "profile").stream()
        .filter(p -> text(p, "id").filter("release"::equals).isPresent())
        .forEach(p -> child(p, "build").flatMap(b -> child(b, "plugins"))
            .ifPresent(pl -> children(pl, "plugin").forEach(x -> text(x, "artifactId").ifPresent(plugins::add)))));
    List<String> missing = new ArrayList<>();
    for (String plugin : List.of("maven-gpg-plugin", "central-publishing-maven-plugin")) {
      if (!plugins.contains(plugin)) {
        missing.add(pom.label() + ": has no parent, so its own <profile> release needs " + plugin);
      }
    }
    return missing;
  }

  /** A published jar names its own valid, unique Java module ({@code Automatic-Module-Name}). */
  private static Optional<String> moduleName(Pom pom, Set<String> seen) {
    Optional<String> own = child(pom.root, "properties").flatMap(p -> text(p, "automatic.module.name"));
    if (own.isEmpty()) {
      return Optional.of(pom.label() + ": no <automatic.module.name> property of its own (its jar's Automatic-Module-Name)");
    }
    String name = own.get();
    if (!SourceVersion.isName(name) || !name.startsWith("io.retrybudget.")) {
      return Optional.of(pom.label() + ": automatic.module.name " + name + " is not a Java module name under io.retrybudget");
    }
    return seen.add(name) ? Optional.empty() : Optional.of(pom.label() + ": automatic.module.name " + name + " is taken");
  }

  private static void inherited(Pom pom, String field, String appendAttribute,
      java.util.function.Function<Pom, Optional<String>> read, List<String> missing) {
    if (read.apply(pom).filter(t -> !t.isBlank()).isPresent()) {
      return;
    }
    for (Pom p = pom.parent; p != null; p = p.parent) {
      if (read.apply(p).filter(t -> !t.isBlank()).isPresent()) {
        Element holder = field.startsWith("scm/") ? child(p.root, "scm").orElseThrow() : p.root;
        if (!"false".equals(holder.getAttribute(appendAttribute))) {
          missing.add(pom.label() + ": <" + field + "> inherited from " + p.artifactId()
              + " with its artifactId appended (set " + appendAttribute + "=\"false\" there)");
        }
        return;
      }
    }
    missing.add(pom.label() + ": no <" + field + ">");
  }

  private static List<Element> list(Pom pom, String outer, String inner) {
    for (Pom p = pom; p != null; p = p.parent) {
      Optional<Element> o = child(p.root, outer);
      if (o.isPresent()) {
        return children(o.get(), inner);
      }
    }
    return List.of();
  }

  /** The BOM lists exactly the published jars (a renamed or new module shows here). */
  private List<String> bomProblems() {
    Optional<Pom> bom = poms.stream().filter(p -> p.artifactId().endsWith("-bom")).findFirst();
    if (bom.isEmpty()) {
      return List.of("no BOM module (an artifactId ending in -bom) among the root POM's modules");
    }
    Set<String> listed = new TreeSet<>();
    child(bom.get().root, "dependencyManagement").flatMap(d -> child(d, "dependencies"))
        .ifPresent(ds -> children(ds, "dependency").forEach(d -> text(d, "artifactId").ifPresent(listed::add)));
    Set<String> published = new TreeSet<>();
    publishedJars().forEach(p -> published.add(p.artifactId()));
    List<String> problems = new ArrayList<>();
    for (String a : published) {
      if (!listed.contains(a)) {
        problems.add(bom.get().label() + ": does not list the published module " + a);
      }
    }
    for (String a : listed) {
      if (!published.contains(a)) {
        problems.add(bom.get().label() + ": lists " + a + ", which no published module of this build is");
      }
    }
    return problems;
  }

  /** The artifactIds a module depends on (any scope). */
  public Set<String> dependencies(Pom pom) {
    Set<String> ids = new TreeSet<>();
    child(pom.root, "dependencies").ifPresent(ds -> children(ds, "dependency")
        .forEach(d -> text(d, "artifactId").ifPresent(ids::add)));
    return ids;
  }

  public Path repo() {
    return repo;
  }

  private static boolean has(Element e, String name) {
    return text(e, name).filter(t -> !t.isBlank()).isPresent();
  }

  static Optional<Element> child(Element parent, String name) {
    List<Element> c = children(parent, name);
    return c.isEmpty() ? Optional.empty() : Optional.of(c.get(0));
  }

  static List<Element> children(Element parent, String name) {
    List<Element> out = new ArrayList<>();
    for (Node n = parent.getFirstChild(); n != null; n = n.getNextSibling()) {
      if (n instanceof Element e && name.equals(e.getTagName())) {
        out.add(e);
      }
    }
    return out;
  }

  static Optional<String> text(Element parent, String name) {
    return child(parent, name).map(e -> e.getTextContent().trim());
  }

  private static Element parse(Path pom) {
    if (!Files.isRegularFile(pom)) {
      throw new IllegalStateException(pom + " does not exist (listed in the root POM's <modules>)");
    }
    try {
      DocumentBuilderFactory f = DocumentBuilderFactory.newInstance();
      f.setFeature("http://apache.org/xml/features/disallow-doctype-decl", true);
      return f.newDocumentBuilder().parse(pom.toFile()).getDocumentElement();
    } catch (IOException | javax.xml.parsers.ParserConfigurationException | org.xml.sax.SAXException e) {
      throw new IllegalStateException("cannot read " + pom + ": " + e.getMessage(), e);
    }
  }
}
