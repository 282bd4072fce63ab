package io.retrybudget.server.example;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.retrybudget.testing.RedisExtension;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The runnable example as the README runs it: real HTTP, real Redis (given, or its own local one). */
class PaymentsExampleTest {
  @RegisterExtension
  static final RedisExtension redis = RedisExtension.standalone();

  private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

  private HttpResponse<String> send(HttpRequest r) throws Exception {
    return http.send(r, HttpResponse.BodyHandlers.ofString());
  }

  private static HttpRequest.Builder post(int port, String key, String body) {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/payments"))
        .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body));
    return key == null ? b : b.header("Idempotency-Key", key);
  }

  @Test
  void itRefusesToStartOnARedisThatEvictsKeys() {
    try (io.retrybudget.testing.RedisServerProcess lru = io.retrybudget.testing.RedisServerProcess.start(
        io.retrybudget.testing.RedisServerProcess.freePort(), List.of("--maxmemory-policy", "allkeys-lru"))) {
      IOException refused = assertThrows(IOException.class,
          () -> PaymentsExample.start(Map.of("REDIS_URL", lru.uri(), "PORT", "0")).close());
      assertTrue(refused.getMessage().contains("maxmemory-policy is 'allkeys-lru'"), refused.getMessage());
    }
  }

  @Test
  void anotherCallerWithTheSameKeyAndBodyIsChargedApart() throws Exception {
    try (PaymentsExample example = PaymentsExample.start(Map.of("REDIS_URL", redis.uri(), "PORT", "0"))) {
      String key = UUID.randomUUID().toString();
      HttpResponse<String> alice = send(post(example.port(), key, "{\"amount\": 42}").header("Authorization", "Bearer alice").build());
      HttpResponse<String> bob = send(post(example.port(), key, "{\"amount\": 42}").header("Authorization", "Bearer bob").build());
      assertEquals(201, alice.statusCode());
      assertEquals(201, bob.statusCode());
      assertFalse(alice.body().equals(bob.body()), "bob must not get alice's charge_id: " + bob.body());
      assertEquals(2, example.charges());
    }
  }

  @Test
  void overlappingDuplicatesChargeOnceAndReplay() throws Exception {
    try (PaymentsExample example = PaymentsExample.start(Map.of("REDIS_URL", redis.uri(), "PORT", "0", "DELAY_MS", "300"))) {
      int port = example.port();
      String key = UUID.randomUUID().toString();
      List<CompletableFuture<HttpResponse<String>>> all = new ArrayList<>();
      for (int i = 0; i < 10; i++) {
        all.add(http.sendAsync(post(port, key, "{\"amount\": 42}").build(), HttpResponse.BodyHandlers.ofString()));
      }
      int executed = 0;
      String body = null;
      List<String> replays = new ArrayList<>();
      for (CompletableFuture<HttpResponse<String>> f : all) {
        HttpResponse<String> r = f.join();
        if (r.statusCode() == 201 && r.headers().firstValue("Idempotent-Replayed").isEmpty()) {
          executed++;
          body = r.body();
        } else if (r.statusCode() == 201) {
          replays.add(r.body()); // a duplicate that came after the first finished (a slow machine)
        } else {
          assertEquals(409, r.statusCode(), r.body());
          assertEquals("1", r.headers().firstValue("Retry-After").orElse(null));
        }
      }
      assertEquals(1, executed, "one charge answered 201, the overlapping ones 409 (or a replay)");
      for (String replayed : replays) {
        assertEquals(body, replayed);
      }
      HttpResponse<String> replay = send(post(port, key, "{\"amount\": 42}").build());
      assertEquals(201, replay.statusCode());
      assertEquals(body, replay.body());
      assertEquals("true", replay.headers().firstValue("Idempotent-Replayed").orElse(null));
      HttpResponse<String> count = send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/payments/count")).build());
      assertEquals("{\"charges\":1}", count.body());
      assertEquals(1, example.charges());
    }
  }

  @Test
  void refusesWhatIsNotAPayment() throws Exception {
    try (PaymentsExample example = PaymentsExample.start(Map.of("REDIS_URL", redis.uri(), "PORT", "0"))) {
      int port = example.port();
      for (String bad : List.of("{\"amount\": 0}", "{\"amount\": -3}", "{\"amount\": \"5\"}", "{\"amount\": 1.5}",
          "{\"amount\": 1, \"amount\": 2}", "{\"amount\": 1, \"x\": 2}", "{}", "[1]", "{\"amount\": 1} x", "{/*c*/\"amount\": 1}")) {
        HttpResponse<String> r = send(post(port, UUID.randomUUID().toString(), bad).build());
        assertEquals(400, r.statusCode(), bad + " -> " + r.body());
        assertTrue(r.body().contains("invalid-body"), r.body());
      }
      assertEquals(400, send(post(port, null, "{\"amount\": 1}").build()).statusCode(), "no key");
      HttpResponse<String> text = send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/payments"))
          .header("Idempotency-Key", "k").header("Content-Type", "text/plain")
          .POST(HttpRequest.BodyPublishers.ofString("{\"amount\": 1}")).build());
      assertEquals(415, text.statusCode());
      HttpResponse<String> big = send(post(port, "k-big", "{\"amount\": 1, \"pad\": \"" + "a".repeat(20_000) + "\"}").build());
      assertEquals(413, big.statusCode());
      assertEquals("application/problem+json", big.headers().firstValue("Content-Type").orElse(""));
      HttpResponse<String> get = send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/payments")).build());
      assertEquals(405, get.statusCode());
      assertEquals("POST", get.headers().firstValue("Allow").orElse(null));
      HttpResponse<String> head = send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/payments/count"))
          .method("HEAD", HttpRequest.BodyPublishers.noBody()).build());
      assertEquals(200, head.statusCode());
      assertEquals(0, example.charges());
    }
  }

  @Test
  void withoutRedisUrlItStartsAndStopsItsOwnRedis() throws Exception {
    PaymentsExample example = PaymentsExample.start(Map.of("PORT", "0"));
    int redisPort;
    try {
      assertEquals(201, send(post(example.port(), "k1", "{\"amount\": 3}").build()).statusCode());
      String uri = example.redisUri();
      redisPort = Integer.parseInt(uri.substring(uri.lastIndexOf(':') + 1));
      assertTrue(listening(redisPort));
    } finally {
      example.close();
    }
    assertFalse(listening(redisPort), "the local Redis stops with the example");
  }

  @Test
  void aWrongEnvironmentValueIsNamed() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> PaymentsExample.start(Map.of("PORT", "http", "REDIS_URL", redis.uri())));
    assertTrue(e.getMessage().startsWith("PORT must be"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> PaymentsExample.start(Map.of("DELAY_MS", "-1", "REDIS_URL", redis.uri())));
    assertTrue(e.getMessage().startsWith("DELAY_MS must be"), e.getMessage());
  }

  private static boolean listening(int port) {
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress("127.0.0.1", port), 500);
      return true;
    } catch (IOException e) {
      return false;
    }
  }
}
