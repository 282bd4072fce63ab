package io.retrybudget.testing;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A TCP proxy on loopback that a test breaks on purpose, the network between a client and its server:
 * <ul>
 *   <li>{@link #cut()} closes every connection through it and each new one at once (a partition that
 *       resets connections) until {@link #heal()};
 *   <li>{@link #lose()} reads and drops what clients send (their writes succeed, nothing reaches the
 *       server, no reply comes: a call lost in flight) until {@link #reset()}, which also closes every
 *       connection, so the clients reconnect and find their server as it was;
 *   <li>{@link #retarget(int)} sends new connections to another port: a stable address whose server is
 *       replaced, as a Kubernetes Service's is when its pod is.
 * </ul>
 * A connection whose server ends is closed on the client's side too. Two daemon threads a connection.
 */
public final class TcpProxy implements AutoCloseable {
  private final ServerSocket server;
  private final List<Socket> open = new CopyOnWriteArrayList<>();
  private volatile int targetPort;
  private volatile boolean cut;
  private volatile boolean losing;
  private volatile boolean closed;

  /** A proxy to {@code targetPort} on loopback, listening on a free port. */
  public TcpProxy(int targetPort) throws IOException {
    this.targetPort = targetPort;
    this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    Thread accept = new Thread(this::accept, "tcp-proxy-accept");
    accept.setDaemon(true);
    accept.start();
  }

  public int port() {
    return server.getLocalPort();
  }

  /** The proxy as a Redis URI. */
  public String uri() {
    return "redis://127.0.0.1:" + port();
  }

  /** Closes every connection through the proxy and every new one until {@link #heal()}. */
  public void cut() {
    cut = true;
    closeAll();
  }

  /** New connections pass again. */
  public void heal() {
    cut = false;
  }

  /** From now on what clients send is dropped. */
  public void lose() {
    losing = true;
  }

  /** Closes every connection (what was dropped is gone for good); new ones pass whole. */
  public void reset() {
    losing = false;
    closeAll();
  }

  /** New connections go to {@code port} from now on. */
  public void retarget(int port) {
    targetPort = port;
  }

  private void closeAll() {
    for (Socket s : open) {
      closeQuietly(s);
    }
    open.clear();
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
        pump(client, upstream, true);
        pump(upstream, client, false);
      } catch (IOException e) {
        closeQuietly(client);
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
        // cut, reset or closed: both ends go
      } finally {
        closeQuietly(from);
        closeQuietly(to);
        open.remove(from);
        open.remove(to);
      }
    }, "tcp-proxy-pump");
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
    closeAll();
  }
}
