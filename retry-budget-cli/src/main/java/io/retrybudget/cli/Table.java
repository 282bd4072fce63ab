package io.retrybudget.cli;

import java.util.ArrayList;
import java.util.List;

/**
 * A plain text table: left-aligned columns two spaces apart, rows optionally highlighted (bold red)
 * when colour is on. Cells are cleaned of control characters; widths count the cleaned text only.
 */
final class Table {
  static final String HIGHLIGHT = "\u001b[1;31m";
  static final String RESET = "\u001b[0m";

  private record Row(List<String> cells, boolean highlighted) {}

  private final List<String> headers;
  private final List<Row> rows = new ArrayList<>();

  Table(List<String> headers) {
    this.headers = List.copyOf(headers);
  }

  /** Adds a row; it must have one cell per header. */
  Table row(List<String> cells, boolean highlighted) {
    if (cells.size() != headers.size()) {
      throw new IllegalArgumentException(headers.size() + " cells expected, got " + cells.size());
    }
    rows.add(new Row(cells.stream().map(Text::clean).toList(), highlighted));
    return this;
  }

  int size() {
    return rows.size();
  }

  /** The table, one line per row after the header line, each ending in a newline. */
  String render(boolean colour) {
    int[] widths = new int[headers.size()];
    for (int i = 0; i < widths.length; i++) {
      widths[i] = headers.get(i).length();
      for (Row r : rows) {
        widths[i] = Math.max(widths[i], r.cells().get(i).length());
      }
    }
    StringBuilder out = new StringBuilder();
    line(out, headers, widths);
    for (Row r : rows) {
      boolean mark = colour && r.highlighted();
      if (mark) {
        out.append(HIGHLIGHT);
      }
      line(out, r.cells(), widths);
      if (mark) {
        out.insert(out.length() - 1, RESET);
      }
    }
    return out.toString();
  }

  private static void line(StringBuilder out, List<String> cells, int[] widths) {
    int start = out.length();
    for (int i = 0; i < cells.size(); i++) {
      if (i > 0) {
        out.append("  ");
      }
      out.append(cells.get(i));
      if (i < cells.size() - 1) {
        out.append(" ".repeat(widths[i] - cells.get(i).length()));
      }
    }
    // no trailing blanks
    int end = out.length();
    while (end > start && out.charAt(end - 1) == ' ') {
      end--;
    }
    out.setLength(end);
    out.append('\n');
  }
}
