package io.retrybudget.buildchecks;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Stream;
import org.objectweb.asm.ClassReader;
import org.objectweb.asm.ClassVisitor;
import org.objectweb.asm.FieldVisitor;
import org.objectweb.asm.MethodVisitor;
import org.objectweb.asm.Opcodes;
import org.objectweb.asm.Type;

/**
 * A library's public API as text, read from its compiled classes, in the manner of Kotlin's
 * binary-compatibility-validator: every class a user can reach (public, or protected and nested,
 * inside reachable classes) with its supertypes, and its public and protected fields, constructors
 * and methods as the JVM links them (erased types). Not API, and left out: packages with a segment
 * {@code internal}, the budget engine's Redis plumbing ({@code io.retrybudget.budget.redis.transport}
 * and {@code .protocol}), synthetic and bridge members, and protected members of final classes
 * (no subclass can reach them). Generic signatures, annotations and {@code throws} clauses are
 * left out too: changing them breaks no linked class.
 */
public final class ApiDump {
  /** Packages (and their subpackages) that are not API, besides any with a segment {@code internal}. */
  public static final List<String> NON_API_PACKAGES = List.of(
      "io.retrybudget.budget.redis.transport", "io.retrybudget.budget.redis.protocol");

  private ApiDump() {}

  /** Whether classes of this package (dotted) are API. */
  public static boolean isApiPackage(String pkg) {
    for (String segment : pkg.split("\\.")) {
      if (segment.equals("internal")) {
        return false;
      }
    }
    for (String excluded : NON_API_PACKAGES) {
      if (pkg.equals(excluded) || pkg.startsWith(excluded + ".")) {
        return false;
      }
    }
    return true;
  }

  private record Cls(String name, int access, String superName, List<String> interfaces, String outer,
      List<String> members) {}

  /** The dump of every class under {@code classesDir} (a compiler's output folder). */
  public static String dump(Path classesDir) {
    Map<String, Cls> classes = new HashMap<>();
    try (Stream<Path> files = Files.walk(classesDir)) {
      for (Path f : files.filter(p -> p.toString().endsWith(".class")).toList()) {
        String file = f.getFileName().toString();
        if (file.equals("module-info.class") || file.equals("package-info.class")) {
          continue;
        }
        Cls c = read(Files.readAllBytes(f));
        classes.put(c.name, c);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read " + classesDir, e);
    }
    Map<String, String> out = new TreeMap<>();
    for (Cls c : classes.values()) {
      if (reachable(c, classes)) {
        out.put(c.name, render(c));
      }
    }
    return String.join("", out.values());
  }

  private static boolean reachable(Cls c, Map<String, Cls> classes) {
    String dotted = c.name.replace('/', '.');
    int lastDot = dotted.lastIndexOf('.');
    if (!isApiPackage(lastDot < 0 ? "" : dotted.substring(0, lastDot))) {
      return false;
    }
    for (Cls k = c; k != null; k = k.outer == null ? null : classes.get(k.outer)) {
      boolean visible = (k.access & Opcodes.ACC_PUBLIC) != 0
          || (k.outer != null && (k.access & Opcodes.ACC_PROTECTED) != 0);
      if (!visible || (k.access & Opcodes.ACC_SYNTHETIC) != 0) {
        return false;
      }
      if (k.outer != null && !classes.containsKey(k.outer)) {
        return false; // a local or anonymous class's outer method, or an outer class not in this jar
      }
    }
    return true;
  }

  private static Cls read(byte[] bytes) {
    List<String> members = new ArrayList<>();
    String[] header = new String[3];
    int[] access = new int[1];
    List<String> interfaces = new ArrayList<>();
    ClassReader reader = new ClassReader(bytes);
    reader.accept(new ClassVisitor(Opcodes.ASM9) {
      @Override
      public void visit(int version, int acc, String name, String signature, String superName, String[] ifaces) {
        header[0] = name;
        header[1] = superName;
        access[0] = acc;
        if (ifaces != null) {
          interfaces.addAll(List.of(ifaces));
        }
      }

      @Override
      public void visitInnerClass(String name, String outerName, String innerName, int acc) {
        if (name.equals(header[0])) {
          access[0] = acc | (access[0] & Opcodes.ACC_SUPER); // the nested class's own modifiers
          header[2] = outerName == null ? "?" : outerName; // "?": local or anonymous
        }
      }

      @Override
      public FieldVisitor visitField(int acc, String name, String descriptor, String signature, Object value) {
        if (member(acc)) {
          members.add(modifiers(acc, false) + Type.getType(descriptor).getClassName() + " " + name);
        }
        return null;
      }

      @Override
      public MethodVisitor visitMethod(int acc, String name, String descriptor, String signature, String[] exceptions) {
        if (member(acc) && (acc & Opcodes.ACC_BRIDGE) == 0 && !name.equals("<clinit>")) {
          StringBuilder params = new StringBuilder();
          for (Type t : Type.getArgumentTypes(descriptor)) {
            params.append(params.length() == 0 ? "" : ", ").append(t.getClassName());
          }
          String ret = name.equals("<init>") ? "" : Type.getReturnType(descriptor).getClassName() + " ";
          members.add(modifiers(acc, true) + ret + name + "(" + params + ")");
        }
        return null;
      }

      private boolean member(int acc) {
        boolean visible = (acc & Opcodes.ACC_PUBLIC) != 0
            || ((acc & Opcodes.ACC_PROTECTED) != 0 && (access[0] & Opcodes.ACC_FINAL) == 0);
        return visible && (acc & Opcodes.ACC_SYNTHETIC) == 0;
      }
    }, ClassReader.SKIP_CODE | ClassReader.SKIP_DEBUG | ClassReader.SKIP_FRAMES);
    String outer = "?".equals(header[2]) ? "?" : header[2];
    return new Cls(header[0], access[0], header[1], interfaces, outer, members);
  }

  private static String modifiers(int acc, boolean method) {
    StringBuilder m = new StringBuilder();
    m.append((acc & Opcodes.ACC_PUBLIC) != 0 ? "public " : "protected ");
    if ((acc & Opcodes.ACC_STATIC) != 0) {
      m.append("static ");
    }
    if ((acc & Opcodes.ACC_FINAL) != 0) {
      m.append("final ");
    }
    if (method && (acc & Opcodes.ACC_ABSTRACT) != 0) {
      m.append("abstract ");
    }
    return m.toString();
  }

  private static String render(Cls c) {
    int acc = c.access;
    StringBuilder s = new StringBuilder();
    s.append((acc & Opcodes.ACC_PUBLIC) != 0 ? "public " : "protected ");
    if (c.outer != null && (acc & Opcodes.ACC_STATIC) != 0) {
      s.append("static ");
    }
    String kind;
    if ((acc & Opcodes.ACC_ANNOTATION) != 0) {
      kind = "@interface ";
    } else if ((acc & Opcodes.ACC_INTERFACE) != 0) {
      kind = "interface ";
    } else if ((acc & Opcodes.ACC_ENUM) != 0) {
      kind = "enum ";
    } else if ("java/lang/Record".equals(c.superName)) {
      kind = "record ";
    } else {
      kind = ((acc & Opcodes.ACC_FINAL) != 0 ? "final " : "") + ((acc & Opcodes.ACC_ABSTRACT) != 0 ? "abstract " : "") + "class ";
    }
    s.append(kind).append(c.name.replace('/', '.'));
    boolean plainSuper = c.superName == null || (acc & (Opcodes.ACC_INTERFACE | Opcodes.ACC_ENUM)) != 0
        || c.superName.equals("java/lang/Object") || c.superName.equals("java/lang/Record");
    if (!plainSuper) {
      s.append(" extends ").append(c.superName.replace('/', '.'));
    }
    if (!c.interfaces.isEmpty() && (acc & Opcodes.ACC_ANNOTATION) == 0) {
      TreeSet<String> sorted = new TreeSet<>();
      c.interfaces.forEach(i -> sorted.add(i.replace('/', '.')));
      s.append((acc & Opcodes.ACC_INTERFACE) != 0 ? " extends " : " implements ").append(String.join(", ", sorted));
    }
    s.append(" {\n");
    new TreeSet<>(c.members).forEach(m -> s.append("  ").append(m).append('\n'));
    return s.append("}\n\n").toString();
  }

  /**
   * A dump as one line per declaration, each member prefixed by its class's header, so that two
   * dumps compare as sets: a line only in the older one was removed or changed.
   */
  static List<String> declarations(String dump) {
    List<String> out = new ArrayList<>();
    String header = null;
    for (String line : dump.split("\n")) {
      if (line.endsWith(" {")) {
        header = line.substring(0, line.length() - 2);
        out.add(header);
      } else if (line.startsWith("  ") && header != null) {
        out.add(header + " :: " + line.trim());
      }
    }
    return out;
  }

  /** Declarations of {@code from} that {@code to} lacks (removed, or changed incompatibly or not). */
  static List<String> missing(String from, String to) {
    TreeSet<String> gone = new TreeSet<>(declarations(from));
    gone.removeAll(declarations(to));
    return List.copyOf(gone);
  }
}
