package io.retrybudget.coordinator.relay;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Writes RESP replies into a growing byte array, in RESP2 or RESP3 (what {@code HELLO} chose). The two
 * differ here only in maps (RESP3 {@code %N}; RESP2 a flat array of 2N) and nulls (RESP3 {@code _};
 * RESP2 {@code $-1}). Simple strings and errors never carry a line break: CR and LF, and any other
 * control byte, are written as spaces, so text a client sent (an unknown command's name) cannot
 * forge a reply. Pure, not thread-safe.
 */
public final class RespWriter {
  private byte[] out = new byte[256];
  private int size;
  private int protocol = 2;

  /** 2 or 3. */
  public void protocol(int version) {
    if (version != 2 && version != 3) {
      throw new IllegalArgumentException("protocol must be 2 or 3, was " + version);
    }
    protocol = version;
  }

  public int protocol() {
    return protocol;
  }

  public RespWriter simple(String text) {
    return line('+', text);
  }

  /** An error reply: {@code text} starts with its code ({@code ERR}, {@code NOSCRIPT}, ...). */
  public RespWriter error(String text) {
    return line('-', text);
  }

  public RespWriter integer(long n) {
    put((byte) ':');
    putAscii(Long.toString(n));
    return crlf();
  }

  public RespWriter bulk(String text) {
    return bulk(text.getBytes(StandardCharsets.UTF_8));
  }

  public RespWriter bulk(byte[] bytes) {
    put((byte) '$');
    putAscii(Integer.toString(bytes.length));
    crlf();
    ensure(bytes.length);
    System.arraycopy(bytes, 0, out, size, bytes.length);
    size += bytes.length;
    return crlf();
  }

  public RespWriter nil() {
    if (protocol == 3) {
      put((byte) '_');
      return crlf();
    }
    put((byte) '$');
    putAscii("-1");
    return crlf();
  }

  /** The header of an array of {@code n} elements; the caller writes them next. */
  public RespWriter array(int n) {
    put((byte) '*');
    putAscii(Integer.toString(n));
    return crlf();
  }

  /** The header of a map of {@code n} entries (key, value, key, value ...); the caller writes them next. */
  public RespWriter map(int n) {
    put(protocol == 3 ? (byte) '%' : (byte) '*');
    putAscii(Integer.toString(protocol == 3 ? n : 2 * n));
    return crlf();
  }

  /** Bytes written so far. */
  public int size() {
    return size;
  }

  /** What was written, and starts again empty (keeping the protocol). */
  public byte[] take() {
    byte[] result = Arrays.copyOf(out, size);
    size = 0;
    return result;
  }

  private RespWriter line(char type, String text) {
    put((byte) type);
    byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
    ensure(bytes.length);
    for (byte b : bytes) {
      out[size++] = (b >= 0 && b < 0x20) || b == 0x7f ? (byte) ' ' : b;
    }
    return crlf();
  }

  private RespWriter crlf() {
    put((byte) '\r');
    put((byte) '\n');
    return this;
  }

  private void putAscii(String s) {
    ensure(s.length());
    for (int i = 0; i < s.length(); i++) {
      out[size++] = (byte) s.charAt(i);
    }
  }

  private void put(byte b) {
    ensure(1);
    out[size++] = b;
  }

  private void ensure(int more) {
    if (size + more > out.length) {
      out = Arrays.copyOf(out, Math.max(out.length * 2, size + more));
    }
  }
}
