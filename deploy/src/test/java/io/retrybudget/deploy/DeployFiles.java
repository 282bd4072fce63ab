package io.retrybudget.deploy;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.yaml.snakeyaml.Yaml;

/** Reads the files of deploy/ (the module's own folder, where surefire runs). */
final class DeployFiles {
  static final Path ROOT = Path.of("").toAbsolutePath();

  private DeployFiles() {}

  static Path path(String relative) {
    return ROOT.resolve(relative);
  }

  static String text(String relative) {
    try {
      return Files.readString(path(relative));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Every document of a YAML file. */
  static List<Object> yamlDocuments(String relative) {
    List<Object> docs = new ArrayList<>();
    for (Object doc : new Yaml().loadAll(text(relative))) {
      if (doc != null) {
        docs.add(doc);
      }
    }
    return docs;
  }

  @SuppressWarnings("unchecked")
  static Map<String, Object> yaml(String relative) {
    return (Map<String, Object>) new Yaml().load(text(relative));
  }

  @SuppressWarnings("unchecked")
  static <T> T at(Object node, Object... path) {
    Object current = node;
    for (Object step : path) {
      if (step instanceof Integer i) {
        current = ((List<Object>) current).get(i);
      } else {
        current = ((Map<String, Object>) current).get(step);
      }
      if (current == null) {
        throw new AssertionError("missing " + java.util.Arrays.toString(path) + " at " + step);
      }
    }
    return (T) current;
  }
}
