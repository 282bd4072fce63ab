package io.retrybudget.server;

/**
 * Reads an Idempotency-Key value. The draft makes it a Structured Field String
 * ({@code "8e03978e-..."}, RFC 8941); a bare token without quotes (as many clients, this SDK
 * among them, send it) is accepted too. Only visible ASCII is allowed (and spaces inside quotes).
 */
final class IdempotencyKeyHeader {
  private IdempotencyKeyHeader() {}

  /** The key, or null when the value is not a valid key of at most {@code maxLength} characters. */
  static String parse(String raw, int maxLength) {
    String v = raw.strip();
    String key;
    if (v.length() >= 2 && v.charAt(0) == '"' && v.charAt(v.length() - 1) == '"') {
      StringBuilder b = new StringBuilder(v.length());
      for (int i = 1; i < v.length() - 1; i++) {
        char c = v.charAt(i);
        if (c == '\\') {
          if (i + 1 >= v.length() - 1) {
            return null;
          }
          char next = v.charAt(++i);
          if (next != '"' && next != '\\') {
            return null;
          }
          b.append(next);
        } else if (c == '"' || c < 0x20 || c > 0x7e) {
          return null;
        } else {
          b.append(c);
        }
      }
      key = b.toString();
    } else {
      for (int i = 0; i < v.length(); i++) {
        char c = v.charAt(i);
        if (c <= 0x20 || c > 0x7e || c == '"' || c == ',' || c == ';') {
          return null;
        }
      }
      key = v;
    }
    return key.isEmpty() || key.length() > maxLength ? null : key;
  }
}
