package io.retrybudget.retry.http;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.sun.net.httpserver.HttpServer;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/** Issue 10, defect 7: a request moved to a replica keeps its path and query byte for byte. */
class ReplicaUriTest {
  @Test
  void encodedPathSegmentsAndQueryValuesSurviveTheMove() {
    URI moved = RetryingHttpClient.onReplica(URI.create("http://a:1/files/a%2Fb?q=x%26y%3Dz&r=1%2B1"),
        URI.create("https://replica-2:8443"));
    assertEquals("https://replica-2:8443/files/a%2Fb?q=x%26y%3Dz&r=1%2B1", moved.toString());
    assertEquals("/files/a%2Fb", moved.getRawPath());
  }

  @Test
  void userInfoFragmentsAndEmptyPathsToo() {
    assertEquals("http://u:p@r:81/?a=%20#f%2F", RetryingHttpClient.onReplica(URI.create("http://h/?a=%20#f%2F"),
        URI.create("http://u:p@r:81")).toString());
    assertEquals("http://r:81", RetryingHttpClient.onReplica(URI.create("http://h"), URI.create("http://r:81")).toString());
  }

  @Test
  void aRealReplicaReceivesTheRawPathAndQuery() throws Exception {
    HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    List<String> seen = new CopyOnWriteArrayList<>();
    server.createContext("/", ex -> {
      seen.add(ex.getRequestURI().getRawPath() + "?" + ex.getRequestURI().getRawQuery());
      ex.sendResponseHeaders(204, -1);
      ex.close();
    });
    server.start();
    URI replica = URI.create("http://127.0.0.1:" + server.getAddress().getPort());
    try (RetryingHttpClient client = RetryingHttpClient.builder(HttpClient.newHttpClient()).replicas(List.of(replica))
        .build()) {
      HttpResponse<Void> r = client.send(HttpRequest.newBuilder(
          URI.create("http://service.invalid/files/a%2Fb?q=x%26y%3Dz&r=1%2B1")).GET().build(),
          HttpResponse.BodyHandlers.discarding());
      assertEquals(204, r.statusCode());
      assertEquals(List.of("/files/a%2Fb?q=x%26y%3Dz&r=1%2B1"), seen, "no parameter injected, no segment split");
    } finally {
      server.stop(0);
    }
  }
}
