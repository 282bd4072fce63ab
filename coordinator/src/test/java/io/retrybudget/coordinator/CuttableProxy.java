package io.retrybudget.coordinator;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A TCP proxy a test can cut or point elsewhere. {@link #cut()} closes every connection through it
 * and closes each new one at once, so whatever connects through it (a relay in front of Redis) is cut
 * off as by a network partition that resets connections; {@link #heal()} lets connections through
 * again. {@link #retarget(int)} sends new connections to another port: a stable address whose server
 * is replaced, as a Kubernetes Service's is when its pod is. A connection whose server ends is closed
 * on the other side too, so a client sees its server die.
 */
final class CuttableProxy implements AutoCloseable {
  private final ServerSocket server;
  private volatile int targetPort;
  private final List<Socket> open = new CopyOnWriteArrayList<>();
  private volatile boolean cut;
  private volatile boolean closed;

  CuttableProxy(int targetPort) throws IOException {
    this.targetPort = targetPort;
    this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    Thread accept = new Thread(this::accept, "proxy-accept");
    accept.setDaemon(true);
    accept.start();
  }

  int port() {
    return server.getLocalPort();
  }

  String uri() {
    return "redis://127.0.0.1:" + port();
  }

  /** Closes every connection through the proxy and every new one until {@link #heal()}. */
  void cut() {
    cut = true;
    for (Socket s : open) {
      closeQuietly(s);
    }
    open.clear();
  }

  void heal() {
    cut = false;
  }

  /** New connections go to {@code port} from now on. */
  void retarget(int port) {
    targetPort = port;
  }

  private void accept() {
    while (!closed) {
      Socket client;
      try {
        client = server.accept();
      } catch (IOException e) {
        return; // closed
      }
      if (cut) {
        closeQuietly(client);
        continue;
      }
      try {
        Socket upstream = new Socket(InetAddress.getLoopbackAddress(), targetPort);
        open.add(client);
        open.add(upstream);
        pump(client, upstream);
        pump(upstream, client);
      } catch (IOException e) {
        closeQuietly(client);
      }
    }
  }

  private void pump(Socket from, Socket to) {
    Thread t = new Thread(() -> {
      byte[] buf = new byte[16 * 1024];
      try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
        for (int n; (n = in.read(buf)) >= 0; ) {
          out.write(buf, 0, n);
        }
      } catch (IOException e) {
        // cut or closed: both ends go
      } finally {
        closeQuietly(from);
        closeQuietly(to);
        open.remove(from);
        open.remove(to);
      }
    }, "proxy-pump");
    t.setDaemon(true);
    t.start();
  }

  private static void closeQuietly(Socket s) {
    try {
      s.close();
    } catch (IOException ignored) {
      // already closed
    }
  }

  @Override
  public void close() throws IOException {
    closed = true;
    server.close();
    cut();
  }
}
