package io.retrybudget.coordinator;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/** HTTP/1.1 over a plain socket, byte for byte as written: for what no HTTP client library would send. */
final class RawHttp implements AutoCloseable {
  /** One answer: status, headers (lower-case names) and body. */
  record Answer(int status, List<String[]> headers, String body) {
    String header(String name) {
      for (String[] h : headers) {
        if (h[0].equals(name.toLowerCase(Locale.ROOT))) {
          return h[1];
        }
      }
      return null;
    }
  }

  private final Socket socket;
  private final InputStream in;

  RawHttp(int port) throws IOException {
    this(null, port);
  }

  /** From {@code localAddress} (a loopback address such as 127.0.0.2), or any when null. */
  RawHttp(String localAddress, int port) throws IOException {
    socket = new Socket();
    if (localAddress != null) {
      socket.bind(new InetSocketAddress(localAddress, 0));
    }
    socket.connect(new InetSocketAddress("127.0.0.1", port), 2000);
    socket.setSoTimeout(5000);
    in = socket.getInputStream();
  }

  RawHttp send(String text) throws IOException {
    return send(text.getBytes(StandardCharsets.ISO_8859_1));
  }

  RawHttp send(byte[] bytes) throws IOException {
    socket.getOutputStream().write(bytes);
    socket.getOutputStream().flush();
    return this;
  }

  /** The status line of the last answer {@link #read}. */
  String lastStatusLine;

  void timeout(int millis) throws IOException {
    socket.setSoTimeout(millis);
  }

  /** Reads one answer (Content-Length framed, as the coordinator sends them). */
  Answer read() throws IOException {
    String head = readHead();
    String[] lines = head.split("\r\n");
    lastStatusLine = lines[0];
    int status = Integer.parseInt(lines[0].split(" ")[1]);
    List<String[]> headers = new ArrayList<>();
    int length = 0;
    for (int i = 1; i < lines.length; i++) {
      int colon = lines[i].indexOf(':');
      String name = lines[i].substring(0, colon).trim().toLowerCase(Locale.ROOT);
      String value = lines[i].substring(colon + 1).trim();
      headers.add(new String[] {name, value});
      if (name.equals("content-length")) {
        length = Integer.parseInt(value);
      }
    }
    return new Answer(status, headers, new String(readBytes(length), StandardCharsets.UTF_8));
  }

  /** Reads one answer to a HEAD request: no body whatever Content-Length says. */
  Answer readHeadOnly() throws IOException {
    String head = readHead();
    String[] lines = head.split("\r\n");
    List<String[]> headers = new ArrayList<>();
    for (int i = 1; i < lines.length; i++) {
      int colon = lines[i].indexOf(':');
      headers.add(new String[] {lines[i].substring(0, colon).trim().toLowerCase(Locale.ROOT),
          lines[i].substring(colon + 1).trim()});
    }
    return new Answer(Integer.parseInt(lines[0].split(" ")[1]), headers, "");
  }

  /** One byte of what the server sends, or -1 at its end. */
  int readByte() throws IOException {
    return in.read();
  }

  /** True when the server closed the connection (EOF or reset) within the socket timeout. */
  boolean closedByServer() throws IOException {
    try {
      byte[] buf = new byte[8192];
      while (true) {
        int n = in.read(buf);
        if (n < 0) {
          return true;
        }
      }
    } catch (SocketTimeoutException e) {
      return false;
    } catch (IOException reset) {
      return true;
    }
  }

  private String readHead() throws IOException {
    ByteArrayOutputStream head = new ByteArrayOutputStream();
    int matched = 0;
    while (matched < 4) {
      int b = in.read();
      if (b < 0) {
        throw new IOException("connection closed before an answer; got: " + head.toString(StandardCharsets.ISO_8859_1));
      }
      head.write(b);
      matched = (b == (matched % 2 == 0 ? '\r' : '\n')) ? matched + 1 : (b == '\r' ? 1 : 0);
    }
    String s = head.toString(StandardCharsets.ISO_8859_1);
    return s.substring(0, s.length() - 4);
  }

  private byte[] readBytes(int n) throws IOException {
    byte[] out = new byte[n];
    int off = 0;
    while (off < n) {
      int r = in.read(out, off, n - off);
      if (r < 0) {
        throw new IOException("connection closed in a body");
      }
      off += r;
    }
    return out;
  }

  @Override
  public void close() throws IOException {
    socket.close();
  }
}
