package io.retrybudget.testing;

import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * A minimal blocking RESP2 client for the harness's own admin commands (readiness, CLUSTER
 * ADDSLOTS/MEET, INFO, SCRIPT FLUSH). Independent of Lettuce, so the harness does not rely on the
 * code under test.
 */
public final class RespClient implements AutoCloseable {
  private final Socket socket;
  private final OutputStream out;
  private final InputStream in;

  public RespClient(String host, int port, int timeoutMillis) throws IOException {
    socket = new Socket();
    socket.connect(new InetSocketAddress(host, port), timeoutMillis);
    socket.setSoTimeout(timeoutMillis);
    out = socket.getOutputStream();
    in = new BufferedInputStream(socket.getInputStream());
  }

  /** Sends one command; returns String, Long, List or null; throws on an error reply. */
  public Object call(String... args) throws IOException {
    StringBuilder sb = new StringBuilder();
    sb.append('*').append(args.length).append("\r\n");
    for (String a : args) {
      byte[] bytes = a.getBytes(StandardCharsets.UTF_8);
      sb.append('$').append(bytes.length).append("\r\n").append(a).append("\r\n");
    }
    out.write(sb.toString().getBytes(StandardCharsets.UTF_8));
    out.flush();
    return read();
  }

  public Object call(List<String> args) throws IOException {
    return call(args.toArray(new String[0]));
  }

  private Object read() throws IOException {
    int type = in.read();
    String line = readLine();
    switch (type) {
      case '+':
        return line;
      case '-':
        throw new IOException("Redis error: " + line);
      case ':':
        return Long.parseLong(line);
      case '$': {
        int len = Integer.parseInt(line);
        if (len < 0) {
          return null;
        }
        byte[] data = in.readNBytes(len);
        readLine();
        return new String(data, StandardCharsets.UTF_8);
      }
      case '*': {
        int n = Integer.parseInt(line);
        if (n < 0) {
          return null;
        }
        List<Object> items = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
          items.add(read());
        }
        return items;
      }
      default:
        throw new IOException("unexpected RESP type " + type);
    }
  }

  private String readLine() throws IOException {
    StringBuilder sb = new StringBuilder();
    int c;
    while ((c = in.read()) != -1) {
      if (c == '\r') {
        in.read();
        break;
      }
      sb.append((char) c);
    }
    return sb.toString();
  }

  @Override
  public void close() throws IOException {
    socket.close();
  }
}
