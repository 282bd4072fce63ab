package io.retrybudget.cli;

/** Text from the coordinator made safe for a terminal. */
final class Text {
  private Text() {}

  /**
   * Replaces control characters (C0, DEL, C1) with '?', so that no answer can move the cursor,
   * change colours or retitle the terminal of the operator reading it.
   */
  static String clean(String s) {
    if (s == null) {
      return "";
    }
    StringBuilder out = null;
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c < 0x20 || (c >= 0x7f && c <= 0x9f)) {
        if (out == null) {
          out = new StringBuilder(s.length()).append(s, 0, i);
        }
        out.append('?');
      } else if (out != null) {
        out.append(c);
      }
    }
    return out == null ? s : out.toString();
  }
}
