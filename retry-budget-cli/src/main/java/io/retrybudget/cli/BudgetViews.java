package io.retrybudget.cli;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

/** How budgets read in table output: pure functions of the coordinator's JSON. */
final class BudgetViews {
  static final List<String> LIST_HEADERS = List.of("NAME", "MODE", "RATIO", "FLOOR/S", "WINDOW", "REQUESTS",
      "RETRIES", "ALLOWANCE", "DENIED", "REMAINING", "STATUS");

  private BudgetViews() {}

  /** The listing of GET /v1/budgets: a table of budgets, then broken budgets and truncation, if any. */
  static String listing(JsonNode listing, boolean colour) {
    Table table = new Table(LIST_HEADERS);
    for (JsonNode b : listing.path("budgets")) {
      table.row(List.of(text(b, "name"), text(b, "mode"), text(b, "ratio"), text(b, "min_retries_per_second"),
          text(b, "window_seconds") + "s", text(b, "requests"), text(b, "retries"), text(b, "allowance"),
          text(b, "denied"), text(b, "remaining"), status(b)), b.path("exhausted").asBoolean(false));
    }
    StringBuilder out = new StringBuilder();
    if (table.size() == 0) {
      out.append("no budgets\n");
    } else {
      out.append(table.render(colour));
    }
    for (JsonNode broken : listing.path("broken")) {
      out.append("broken: ").append(Text.clean(text(broken, "name"))).append(" (key ").append(Text.clean(text(broken, "key")))
          .append(", field ").append(Text.clean(text(broken, "field"))).append("): ").append(Text.clean(text(broken, "error")))
          .append('\n');
    }
    if (listing.path("truncated").asBoolean(false)) {
      out.append("(more budgets exist than the coordinator lists: COORDINATOR_MAX_BUDGETS)\n");
    }
    return out.toString();
  }

  /** One budget (GET /v1/budgets/{name}): its fields one per line, then its window bucket by bucket. */
  static String detail(JsonNode budget, boolean colour) {
    int width = 0;
    for (Iterator<String> names = budget.fieldNames(); names.hasNext(); ) {
      width = Math.max(width, names.next().length());
    }
    StringBuilder out = new StringBuilder();
    boolean exhausted = budget.path("exhausted").asBoolean(false);
    for (Iterator<Map.Entry<String, JsonNode>> fields = budget.fields(); fields.hasNext(); ) {
      Map.Entry<String, JsonNode> f = fields.next();
      if (f.getValue().isContainerNode()) {
        continue;
      }
      String line = Text.clean(f.getKey()) + " ".repeat(width - f.getKey().length() + 2) + Text.clean(f.getValue().asText());
      boolean mark = colour && exhausted && f.getKey().equals("exhausted");
      out.append(mark ? Table.HIGHLIGHT + line + Table.RESET : line).append('\n');
    }
    JsonNode buckets = budget.path("buckets");
    if (buckets.isArray() && !buckets.isEmpty()) {
      long now = budget.path("now_ms").asLong();
      Table table = new Table(List.of("BUCKET", "AGE", "REQUESTS", "RETRIES", "DENIED"));
      int i = 0;
      for (JsonNode bucket : buckets) {
        table.row(List.of(Integer.toString(++i), (now - bucket.path("start_ms").asLong()) + " ms", text(bucket, "requests"),
            text(bucket, "retries"), text(bucket, "denied")), false);
      }
      out.append('\n').append(table.render(colour));
    }
    return out.toString();
  }

  /** "ok", or "EXHAUSTED" with when the next permit comes ("shadow" when it only would deny). */
  static String status(JsonNode b) {
    if (!b.path("exhausted").asBoolean(false)) {
      return "ok";
    }
    List<String> parts = new ArrayList<>();
    long next = b.path("next_grant_ms").asLong(-1);
    parts.add(next < 0 ? "no refill" : "next in " + next + " ms");
    if ("shadow".equals(b.path("mode").asText())) {
      parts.add("shadow: not enforced");
    }
    return "EXHAUSTED (" + String.join(", ", parts) + ")";
  }

  private static String text(JsonNode node, String field) {
    JsonNode v = node.path(field);
    return v.isMissingNode() || v.isNull() ? "-" : v.asText();
  }
}
