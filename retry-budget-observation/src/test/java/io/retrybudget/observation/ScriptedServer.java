package io.retrybudget.observation;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Deque;
import java.util.List;
import java.util.Map;

/**
 * A real HTTP server on loopback that answers each request with the next scripted answer (the last
 * one again once the script runs out) and records the {@code X-Retry-Attempt} header it saw.
 */
final class ScriptedServer implements AutoCloseable {
  /** An answer: a status and headers. */
  record Answer(int status, Map<String, String> headers) {
    static Answer of(int status) {
      return new Answer(status, Map.of());
    }
  }

  private final HttpServer server;
  private final Deque<Answer> script = new ArrayDeque<>();
  private Answer last = Answer.of(200);
  final List<String> attemptHeaders = Collections.synchronizedList(new ArrayList<>());

  ScriptedServer(Answer... answers) throws IOException {
    script.addAll(List.of(answers));
    server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    server.createContext("/", exchange -> {
      attemptHeaders.add(exchange.getRequestHeaders().getFirst("X-Retry-Attempt"));
      Answer a = next();
      a.headers().forEach((k, v) -> exchange.getResponseHeaders().add(k, v));
      byte[] body = ("status " + a.status()).getBytes(StandardCharsets.UTF_8);
      exchange.sendResponseHeaders(a.status(), body.length);
      try (OutputStream out = exchange.getResponseBody()) {
        out.write(body);
      }
    });
    server.start();
  }

  private synchronized Answer next() {
    if (!script.isEmpty()) {
      last = script.poll();
    }
    return last;
  }

  URI uri() {
    return URI.create("http://" + server.getAddress().getHostString() + ":" + server.getAddress().getPort() + "/items");
  }

  @Override
  public void close() {
    server.stop(0);
  }
}
