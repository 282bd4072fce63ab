package io.retrybudget.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.retrybudget.testing.Eventually;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Two real local replicas answering as tie guards would: the body of the copy that is not the call's
 * answer (a lost tie, a refusal ranked below the other copy's) is closed, whichever copy came first.
 * Each replica waits for the other to be asked before answering, so both copies are always sent. The
 * bounded waits (30 s) only stop a hang: each waits for a local server's answer.
 */
class TiedSenderBodiesTest {
  private final CountDownLatch bothAsked = new CountDownLatch(2);
  private final List<HttpServer> servers = new ArrayList<>();
  private final List<Tracked> bodies = Collections.synchronizedList(new ArrayList<>());

  /** A response body that says whether it was closed. */
  static final class Tracked extends FilterInputStream {
    final String what;
    volatile boolean closed;

    Tracked(InputStream in, String what) {
      super(in);
      this.what = what;
    }

    @Override
    public void close() throws IOException {
      closed = true;
      super.close();
    }

    @Override
    public String toString() {
      return what + (closed ? " closed" : " open");
    }
  }

  private final HttpResponse.BodyHandler<Tracked> tracked = info -> HttpResponse.BodySubscribers.mapping(
      HttpResponse.BodyHandlers.ofInputStream().apply(info), in -> {
        String what = info.headers().firstValue(TieGuard.WON_HEADER).isPresent() ? "won"
            : info.headers().firstValue(TieGuard.LOST_HEADER).isPresent() ? "lost" : Integer.toString(info.statusCode());
        Tracked t = new Tracked(in, what);
        bodies.add(t);
        return t;
      });

  /** A replica that answers {@code status} with {@code header: true} once both copies were asked. */
  private URI replica(int status, String header) throws IOException {
    HttpServer s = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    s.setExecutor(Executors.newCachedThreadPool());
    s.createContext("/", ex -> {
      bothAsked.countDown();
      try {
        bothAsked.await(30, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      respond(ex, status, header);
    });
    s.start();
    servers.add(s);
    return URI.create("http://127.0.0.1:" + s.getAddress().getPort());
  }

  private static void respond(HttpExchange ex, int status, String header) throws IOException {
    if (header != null) {
      ex.getResponseHeaders().add(header, "true");
    }
    // 66 KB: more than one buffer of the JDK's, so an unread body holds its connection until it is closed
    byte[] bytes = ("status " + status + " ").repeat(6_000).getBytes(StandardCharsets.UTF_8);
    ex.sendResponseHeaders(status, bytes.length);
    try (var out = ex.getResponseBody()) {
      out.write(bytes);
    } catch (IOException closedByTheClient) {
      // a discarded body the client closed before reading it
    }
    ex.close();
  }

  @AfterEach
  void stop() {
    servers.forEach(s -> s.stop(0));
  }

  private HttpResponse<Tracked> send(List<URI> replicas) throws Exception {
    TiedSender sender = TiedSender.builder(HttpClient.newHttpClient()).replicas(replicas).build();
    return sender.send(HttpRequest.newBuilder(URI.create("http://placeholder/work")).build(), tracked)
        .get(30, TimeUnit.SECONDS);
  }

  private void awaitBothClosedButTheAnswer(HttpResponse<Tracked> answer) {
    Eventually.await("both copies in, the other one's body closed: " + bodies, Duration.ofSeconds(30), () -> {
      synchronized (bodies) {
        return bodies.size() == 2 && bodies.stream().allMatch(b -> b == answer.body() || b.closed);
      }
    });
    assertFalse(answer.body().closed, "the answer's body stays open");
  }

  @Test
  void theCopyThatLostTheTieHasItsBodyClosed() throws Exception {
    HttpResponse<Tracked> answer = send(List.of(replica(200, TieGuard.WON_HEADER), replica(200, TieGuard.LOST_HEADER)));
    assertEquals("won", answer.body().what);
    awaitBothClosedButTheAnswer(answer);
    assertEquals("[lost closed]", bodies.stream().filter(b -> b != answer.body()).toList().toString());
  }

  @Test
  void whenNeitherWonTheBestAnswersAndTheOtherIsClosed() throws Exception {
    HttpResponse<Tracked> answer = send(List.of(replica(503, null), replica(200, TieGuard.LOST_HEADER)));
    assertEquals(503, answer.statusCode(), "a refusal ranks above a lost tie");
    awaitBothClosedButTheAnswer(answer);
    assertEquals("[lost closed]", bodies.stream().filter(b -> b != answer.body()).toList().toString());
  }
}
