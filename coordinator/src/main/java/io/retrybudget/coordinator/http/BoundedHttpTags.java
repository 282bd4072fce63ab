package io.retrybudget.coordinator.http;

import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.config.MeterFilter;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * Keeps the tags of the HTTP meters (vertx.http.*) to bounded sets whatever a client sends: a
 * method outside the standard ones, a status that is not a three-digit code, or a route that is not
 * one of the server's templates becomes {@code OTHER}; no tag ever holds a raw path. (Unknown methods
 * are refused before Vert.x anyway, by the {@link ConnectionGuard}; this is the second wall.)
 */
public final class BoundedHttpTags implements MeterFilter {
  static final String OTHER = "OTHER";
  private static final Pattern CODE = Pattern.compile("[1-5][0-9][0-9]");
  private volatile Set<String> routes = Set.of();

  /** The route templates the router serves; set before the server listens. */
  public void routes(Set<String> templates) {
    this.routes = Set.copyOf(templates);
  }

  @Override
  public Meter.Id map(Meter.Id id) {
    if (!id.getName().startsWith("vertx.http.")) {
      return id;
    }
    List<Tag> tags = id.getTags();
    List<Tag> out = null;
    for (int i = 0; i < tags.size(); i++) {
      Tag t = tags.get(i);
      String bounded = bound(t.getKey(), t.getValue());
      if (!bounded.equals(t.getValue())) {
        if (out == null) {
          out = new ArrayList<>(tags);
        }
        out.set(i, Tag.of(t.getKey(), bounded));
      }
    }
    return out == null ? id : id.replaceTags(out);
  }

  private String bound(String key, String value) {
    switch (key) {
      case "method":
        return RequestRefusals.KNOWN_METHODS.contains(value) ? value : OTHER;
      case "code":
        return CODE.matcher(value).matches() ? value : OTHER;
      case "route":
        return value.isEmpty() || routes.contains(value) ? value : OTHER;
      case "path":
        return OTHER;
      default:
        return value;
    }
  }
}
