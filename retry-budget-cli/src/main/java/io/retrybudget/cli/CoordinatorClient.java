package io.retrybudget.cli;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.net.ConnectException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The coordinator's budget API over {@code java.net.http}. Every call is bounded: the whole exchange
 * (connect, headers and body) must end within the timeout, and a body over the size cap is refused.
 * A 4xx or 5xx answer, a timeout or an unreachable coordinator is a {@link CliFailure} whose message
 * passes on the coordinator's error and the field it names: its RFC 9457 problem's {@code detail} and
 * {@code field} (a coordinator before 0.2 sent {@code {"error", "field"}}, still read).
 */
final class CoordinatorClient {
  /** The JSON field names of PUT /v1/budgets/{name} and the CLI options that set them. */
  static final Map<String, String> FIELD_OPTIONS = Map.of("ratio", "--ratio", "min_retries_per_second", "--floor",
      "window_seconds", "--window", "mode", "--mode", "max_calls_per_second", "--max-calls", "Authorization", "--token or RETRY_BUDGET_TOKEN");

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final int SHOWN_BODY_CHARS = 200;

  private final HttpClient http;
  private final String base;
  private final String token;
  private final Duration timeout;
  private final BoundedBody bodies;

  /**
   * @param base the coordinator's base URL (http or https, no trailing slash needed)
   * @param token the bearer token for writes, or null
   * @param timeout the most one exchange may take, connecting included
   * @param maxBodyBytes the longest response body accepted
   */
  CoordinatorClient(URI base, String token, Duration timeout, long maxBodyBytes) {
    String b = base.toString();
    this.base = b.endsWith("/") ? b.substring(0, b.length() - 1) : b;
    this.token = token;
    this.timeout = timeout;
    this.bodies = new BoundedBody(maxBodyBytes);
    this.http = HttpClient.newBuilder().connectTimeout(timeout).followRedirects(HttpClient.Redirect.NEVER).build();
  }

  String base() {
    return base;
  }

  /** GET /v1/budgets: {@code {budgets, broken, truncated}}. */
  JsonNode list() {
    return json(send(request("/v1/budgets").GET(), "GET /v1/budgets"));
  }

  /** GET /v1/budgets/{name}: the budget's status and window bucket by bucket. */
  JsonNode get(String name) {
    return json(send(request(budgetPath(name)).GET(), "GET " + budgetPath(name)));
  }

  /** PUT /v1/budgets/{name}: sets the given fields, creating the budget if it has no configuration. */
  JsonNode put(String name, ObjectNode fields) {
    String body;
    try {
      body = JSON.writeValueAsString(fields);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("an ObjectNode always serializes", e);
    }
    HttpRequest.Builder r = authorized(request(budgetPath(name)))
        .header("Content-Type", "application/json")
        .PUT(HttpRequest.BodyPublishers.ofString(body, StandardCharsets.UTF_8));
    return json(send(r, "PUT " + budgetPath(name)));
  }

  /** DELETE /v1/budgets/{name}. */
  void delete(String name) {
    send(authorized(request(budgetPath(name))).DELETE(), "DELETE " + budgetPath(name));
  }

  /** The budget's path, its name percent-encoded so that no name can reach another resource. */
  static String budgetPath(String name) {
    StringBuilder path = new StringBuilder("/v1/budgets/");
    boolean onlyDots = name.chars().allMatch(c -> c == '.');
    for (byte b : name.getBytes(StandardCharsets.UTF_8)) {
      char c = (char) (b & 0xff);
      boolean plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
          || c == '-' || c == '_' || (c == '.' && !onlyDots);
      if (plain) {
        path.append(c);
      } else {
        path.append('%').append(Character.toUpperCase(Character.forDigit((b >> 4) & 0xf, 16)))
            .append(Character.toUpperCase(Character.forDigit(b & 0xf, 16)));
      }
    }
    return path.toString();
  }

  private HttpRequest.Builder request(String path) {
    return HttpRequest.newBuilder(URI.create(base + path)).timeout(timeout)
        .header("Accept", "application/json, application/problem+json");
  }

  private HttpRequest.Builder authorized(HttpRequest.Builder r) {
    return token == null ? r : r.header("Authorization", "Bearer " + token);
  }

  private HttpResponse<byte[]> send(HttpRequest.Builder request, String what) {
    CompletableFuture<HttpResponse<byte[]>> exchange = http.sendAsync(request.build(), bodies);
    HttpResponse<byte[]> response;
    try {
      // the request timeout covers the headers only: this bounds the body too
      response = exchange.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      exchange.cancel(true);
      throw timedOut(what);
    } catch (InterruptedException e) {
      exchange.cancel(true);
      Thread.currentThread().interrupt();
      throw new CliFailure(what + ": interrupted");
    } catch (ExecutionException e) {
      throw unreachable(what, e.getCause());
    }
    if (response.statusCode() >= 400) {
      throw new CliFailure(refusal(what, response.statusCode(), response.body()));
    }
    return response;
  }

  private CliFailure timedOut(String what) {
    return new CliFailure(what + ": the coordinator at " + base + " did not answer within " + timeout.toMillis() + " ms");
  }

  private CliFailure unreachable(String what, Throwable cause) {
    if (cause instanceof HttpTimeoutException) {
      return timedOut(what);
    }
    if (cause instanceof BoundedBody.TooLargeException) {
      return new CliFailure(what + ": " + cause.getMessage());
    }
    for (Throwable t = cause; t != null; t = t.getCause()) {
      if (t instanceof ConnectException) {
        return new CliFailure(what + ": cannot reach the coordinator at " + base + ": connection refused");
      }
    }
    String message = cause.getMessage() == null ? cause.getClass().getSimpleName() : cause.getMessage();
    return new CliFailure(what + ": cannot reach the coordinator at " + base + ": " + Text.clean(message));
  }

  /**
   * "HTTP 400 ... field ratio (--ratio): message", from the coordinator's problem ({@code detail},
   * {@code field}), or from an older coordinator's {@code {"error", "field"}}, when it sent one.
   */
  static String refusal(String what, int status, byte[] body) {
    StringBuilder m = new StringBuilder(what).append(": HTTP ").append(status);
    JsonNode error = parseOrNull(body);
    JsonNode message = error == null ? null : error.path("detail").isTextual() ? error.path("detail") : error.path("error");
    if (message != null && message.isTextual()) {
      JsonNode field = error.path("field");
      if (field.isTextual()) {
        String f = Text.clean(field.asText());
        m.append(", field ").append(f);
        String option = FIELD_OPTIONS.get(f);
        if (option != null) {
          m.append(" (").append(option).append(')');
        }
      }
      if (error.path("key").isTextual()) {
        m.append(", key ").append(Text.clean(error.path("key").asText()));
      }
      m.append(": ").append(Text.clean(message.asText()));
    } else if (body.length > 0) {
      String text = new String(body, StandardCharsets.UTF_8);
      m.append(": ").append(Text.clean(text.length() > SHOWN_BODY_CHARS ? text.substring(0, SHOWN_BODY_CHARS) + "..." : text));
    }
    return m.toString();
  }

  private JsonNode json(HttpResponse<byte[]> response) {
    try {
      return JSON.readTree(response.body());
    } catch (IOException e) {
      throw new CliFailure("the coordinator at " + base + " answered " + response.statusCode() + " with a body that is not JSON: "
          + Text.clean(e instanceof JsonProcessingException j ? j.getOriginalMessage() : e.getMessage()));
    }
  }

  private static JsonNode parseOrNull(byte[] body) {
    try {
      return body.length == 0 ? null : JSON.readTree(body);
    } catch (IOException e) {
      return null;
    }
  }

  /** Compact JSON of a node, for --output json. */
  static String compact(JsonNode node) {
    try {
      return JSON.writeValueAsString(node);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("a parsed JsonNode always serializes", e);
    }
  }

  static ObjectNode object() {
    return JSON.createObjectNode();
  }
}
