package io.retrybudget.reactor;

import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.BiFunction;
import org.reactivestreams.Publisher;
import reactor.netty.DisposableServer;
import reactor.netty.http.server.HttpServer;
import reactor.netty.http.server.HttpServerRequest;
import reactor.netty.http.server.HttpServerResponse;

/**
 * A real Reactor Netty HTTP server on a free loopback port whose answer the test sets, recording
 * the headers of every request it receives (in arrival order).
 */
final class TestServer implements AutoCloseable {
  /** The headers a request arrived with, lower-case names, first values. */
  record Seen(String method, String path, Map<String, String> headers, String body, long atNanos) {
    String header(String name) {
      return headers.get(name.toLowerCase(java.util.Locale.ROOT));
    }
  }

  final List<Seen> seen = new CopyOnWriteArrayList<>();
  private volatile BiFunction<HttpServerRequest, HttpServerResponse, Publisher<Void>> handler =
      (req, res) -> res.sendString(reactor.core.publisher.Mono.just("ok"));
  private final DisposableServer server;

  TestServer() {
    server = HttpServer.create().host("127.0.0.1").port(0).handle((req, res) -> {
      Map<String, String> headers = new java.util.HashMap<>();
      req.requestHeaders().forEach(e -> headers.putIfAbsent(e.getKey().toLowerCase(java.util.Locale.ROOT), e.getValue()));
      long at = System.nanoTime();
      return req.receive().aggregate().asString().defaultIfEmpty("").flatMapMany(body -> {
        seen.add(new Seen(req.method().name(), req.uri(), headers, body, at));
        return handler.apply(req, res);
      });
    }).bindNow();
  }

  void answer(BiFunction<HttpServerRequest, HttpServerResponse, Publisher<Void>> handler) {
    this.handler = handler;
  }

  String url(String path) {
    return "http://127.0.0.1:" + server.port() + path;
  }

  @Override
  public void close() {
    server.disposeNow();
  }
}
