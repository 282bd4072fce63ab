package io.retrybudget.server;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;

/**
 * SHA-256 of a request's method, target (path and query), selected headers and body. Each part is
 * length-prefixed, so no two different requests share an encoding (a header value cannot run into
 * the body).
 */
public final class Fingerprint {
  private Fingerprint() {}

  /** Lower-case hex SHA-256 of the request, over {@code headers} (names, in the order given). */
  public static String of(RequestView request, List<String> headers) {
    MessageDigest d = sha256();
    part(d, request.method().toUpperCase(Locale.ROOT).getBytes(StandardCharsets.UTF_8));
    part(d, request.target().getBytes(StandardCharsets.UTF_8));
    for (String name : headers) {
      String value = request.header(name);
      part(d, name.toLowerCase(Locale.ROOT).getBytes(StandardCharsets.UTF_8));
      // a missing header and an empty one differ
      part(d, value == null ? new byte[] {0} : ("=" + value.strip()).getBytes(StandardCharsets.UTF_8));
    }
    part(d, request.body());
    return HexFormat.of().formatHex(d.digest());
  }

  /** Lower-case hex SHA-256 of the parts, each length-prefixed. */
  public static String hash(String... parts) {
    MessageDigest d = sha256();
    for (String p : parts) {
      part(d, p.getBytes(StandardCharsets.UTF_8));
    }
    return HexFormat.of().formatHex(d.digest());
  }

  private static void part(MessageDigest d, byte[] bytes) {
    int n = bytes.length;
    d.update(new byte[] {(byte) (n >>> 24), (byte) (n >>> 16), (byte) (n >>> 8), (byte) n});
    d.update(bytes);
  }

  private static MessageDigest sha256() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 not available", e);
    }
  }
}
