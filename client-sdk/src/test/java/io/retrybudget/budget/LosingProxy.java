package io.retrybudget.budget;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A TCP proxy in front of a server that can lose what its clients send: while {@link #lose} is on,
 * bytes from a client are read and dropped (its writes succeed, nothing reaches the server, no reply
 * comes), as a network that loses a call in flight; {@link #reset()} closes every connection and lets
 * new ones through whole, so the client reconnects and finds its server as it was.
 */
final class LosingProxy implements AutoCloseable {
  private final ServerSocket server;
  private final int targetPort;
  private final List<Socket> open = new CopyOnWriteArrayList<>();
  private volatile boolean losing;
  private volatile boolean closed;

  LosingProxy(int targetPort) throws IOException {
    this.targetPort = targetPort;
    this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    Thread accept = new Thread(this::accept, "losing-proxy-accept");
    accept.setDaemon(true);
    accept.start();
  }

  String uri() {
    return "redis://127.0.0.1:" + server.getLocalPort();
  }

  /** From now on what clients send is dropped. */
  void lose() {
    losing = true;
  }

  /** Closes every connection (what was dropped is gone for good); new ones pass whole. */
  void reset() {
    losing = false;
    for (Socket s : open) {
      closeQuietly(s);
    }
    open.clear();
  }

  private void accept() {
    while (!closed) {
      try {
        Socket client = server.accept();
        Socket upstream = new Socket(InetAddress.getLoopbackAddress(), targetPort);
        open.add(client);
        open.add(upstream);
        pump(client, upstream, true);
        pump(upstream, client, false);
      } catch (IOException e) {
        if (closed) {
          return;
        }
      }
    }
  }

  private void pump(Socket from, Socket to, boolean fromClient) {
    Thread t = new Thread(() -> {
      byte[] buf = new byte[16 * 1024];
      try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
        for (int n; (n = in.read(buf)) >= 0; ) {
          if (!(fromClient && losing)) {
            out.write(buf, 0, n);
          }
        }
      } catch (IOException e) {
        // reset or closed: both ends go
      } finally {
        closeQuietly(from);
        closeQuietly(to);
      }
    }, "losing-proxy-pump");
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
    reset();
  }
}
