package io.retrybudget.server;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.Locale;
import java.util.Objects;

/**
 * An HTTP answer as the server kit stores, replays and writes it: status, headers (in order, names
 * as given) and body. Immutable; the body array is copied in and never handed out for writing.
 */
public final class StoredResponse {
  /** One header line. */
  public record Header(String name, String value) {
    public Header {
      Objects.requireNonNull(name, "name");
      Objects.requireNonNull(value, "value");
    }
  }

  private final int status;
  private final List<Header> headers;
  private final byte[] body;

  public StoredResponse(int status, List<Header> headers, byte[] body) {
    if (status < 100 || status > 599) {
      throw new IllegalArgumentException("status must be in [100, 599], was " + status);
    }
    this.status = status;
    this.headers = List.copyOf(headers);
    this.body = body == null ? new byte[0] : body.clone();
  }

  public int status() {
    return status;
  }

  public List<Header> headers() {
    return headers;
  }

  /** The first value of a header (case-insensitive name), or null. */
  public String header(String name) {
    for (Header h : headers) {
      if (h.name().equalsIgnoreCase(name)) {
        return h.value();
      }
    }
    return null;
  }

  public byte[] body() {
    return body.clone();
  }

  public int bodyLength() {
    return body.length;
  }

  /** A copy with one more header. */
  public StoredResponse withHeader(String name, String value) {
    List<Header> h = new ArrayList<>(headers);
    h.add(new Header(name, value));
    return new StoredResponse(status, h, body);
  }

  // --- the encoding in Redis (lua/README.md): headers as "name\nvalue\n" pairs, body as Base64

  String encodedHeaders() {
    StringBuilder b = new StringBuilder();
    for (Header h : headers) {
      b.append(h.name()).append('\n').append(h.value()).append('\n');
    }
    return b.toString();
  }

  String encodedBody() {
    return Base64.getEncoder().encodeToString(body);
  }

  static StoredResponse decode(String status, String headers, String body) {
    List<Header> list = new ArrayList<>();
    if (headers != null && !headers.isEmpty()) {
      String[] parts = headers.split("\n", -1);
      for (int i = 0; i + 1 < parts.length; i += 2) {
        list.add(new Header(parts[i], parts[i + 1]));
      }
    }
    return new StoredResponse(Integer.parseInt(status), list,
        body == null || body.isEmpty() ? new byte[0] : Base64.getDecoder().decode(body));
  }

  /** Header values that can be stored: no CR or LF (a server would refuse them anyway). */
  static boolean storable(String name, String value) {
    return name.indexOf('\n') < 0 && name.indexOf('\r') < 0 && value.indexOf('\n') < 0 && value.indexOf('\r') < 0
        && !name.isEmpty() && !name.toLowerCase(Locale.ROOT).equals("idempotent-replayed");
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof StoredResponse r && r.status == status && r.headers.equals(headers) && Arrays.equals(r.body, body);
  }

  @Override
  public int hashCode() {
    return 31 * (31 * status + headers.hashCode()) + Arrays.hashCode(body);
  }

  @Override
  public String toString() {
    return "StoredResponse[" + status + ", " + headers + ", " + body.length + " bytes]";
  }
}
