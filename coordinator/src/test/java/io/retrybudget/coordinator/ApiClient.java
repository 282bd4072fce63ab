package io.retrybudget.coordinator;

import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import io.vertx.openapi.contract.OpenAPIContract;
import io.vertx.openapi.validation.ResponseValidator;
import io.vertx.openapi.validation.ValidatableResponse;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Real HTTP against a running coordinator; every response is checked against
 * coordinator/openapi.yaml (status, headers, media type, body schema) before the test sees it.
 *
 * <p>vertx-openapi validates JSON bodies of {@code application/json} and vendor types
 * ({@code application/vnd.x+json}) only: the contract is loaded with {@code application/problem+json}
 * renamed to {@link #PROBLEM_AS_VENDOR}, and a problem answer is validated under that name, so its
 * media type and its members are both checked against the document.
 */
final class ApiClient implements AutoCloseable {
  record Response(int status, String body, HttpResponse<String> raw) {
    JsonObject json() {
      return new JsonObject(body);
    }
  }

  static final String PROBLEM = "application/problem+json";
  static final String PROBLEM_AS_VENDOR = "application/vnd.retrybudget-problem+json";
  private final Vertx vertx = Vertx.vertx();
  private final OpenAPIContract contract;
  private final ResponseValidator validator;
  private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
  private final String base;
  private final String token;

  ApiClient(int port, String token) throws Exception {
    this.base = "http://127.0.0.1:" + port;
    this.token = token;
    java.nio.file.Path renamed = java.nio.file.Files.createTempFile("openapi", ".yaml");
    try {
      java.nio.file.Files.writeString(renamed, java.nio.file.Files.readString(java.nio.file.Path.of("openapi.yaml"))
          .replace(PROBLEM, PROBLEM_AS_VENDOR));
      this.contract = OpenAPIContract.from(vertx, renamed.toString()).toCompletionStage().toCompletableFuture()
          .get(30, TimeUnit.SECONDS);
    } finally {
      java.nio.file.Files.delete(renamed);
    }
    this.validator = ResponseValidator.create(vertx, contract);
  }

  String base() {
    return base;
  }

  Response get(String operationId, String path) throws Exception {
    return send(operationId, HttpRequest.newBuilder(URI.create(base + path)).GET());
  }

  Response write(String operationId, String method, String path, String body) throws Exception {
    return write(operationId, method, path, body, token);
  }

  Response write(String operationId, String method, String path, String body, String bearer) throws Exception {
    return send(operationId, writeRequest(method, path, body, bearer));
  }

  /** As {@link #write(String, String, String, String)}, waited for up to {@code timeout}. */
  Response writeWithin(String operationId, String method, String path, String body, Duration timeout) throws Exception {
    return send(operationId, writeRequest(method, path, body, token), timeout);
  }

  private HttpRequest.Builder writeRequest(String method, String path, String body, String bearer) {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + path))
        .method(method, HttpRequest.BodyPublishers.ofString(body)).header("Content-Type", "application/json");
    if (bearer != null) {
      b.header("Authorization", "Bearer " + bearer);
    }
    return b;
  }

  /** Sends without the contract check, for paths the contract does not describe (404s). */
  HttpResponse<String> raw(HttpRequest request) throws Exception {
    return http.send(request, HttpResponse.BodyHandlers.ofString());
  }

  Response send(String operationId, HttpRequest.Builder request) throws Exception {
    return send(operationId, request, Duration.ofSeconds(10));
  }

  /** As {@link #send(String, HttpRequest.Builder)}, waited for up to {@code timeout} (a coordinator loaded on purpose). */
  Response send(String operationId, HttpRequest.Builder request, Duration timeout) throws Exception {
    HttpResponse<String> r = http.send(request.timeout(timeout).build(), HttpResponse.BodyHandlers.ofString());
    validate(operationId, r);
    return new Response(r.statusCode(), r.body(), r);
  }

  void validate(String operationId, HttpResponse<String> r) throws Exception {
    Map<String, String> headers = new HashMap<>();
    r.headers().map().forEach((k, v) -> headers.put(k, String.join(",", v)));
    String contentType = r.headers().firstValue("content-type").orElse(null);
    if (PROBLEM.equals(contentType)) {
      contentType = PROBLEM_AS_VENDOR;
      headers.keySet().removeIf(k -> k.equalsIgnoreCase("content-type"));
      headers.put("content-type", contentType);
    }
    if (contentType != null && !contentType.startsWith("application/json") && !contentType.equals(PROBLEM_AS_VENDOR)) {
      // vertx-openapi validates JSON bodies only; for others (the Prometheus text of /metrics)
      // check that the contract declares this status with this media type
      io.vertx.openapi.contract.Response declared = contract.operation(operationId).getResponse(r.statusCode());
      String mediaType = contentType.split(";")[0].trim();
      if (declared == null || !declared.getContent().containsKey(mediaType)) {
        throw new AssertionError(operationId + " answered " + r.statusCode() + " " + mediaType + ", not in openapi.yaml");
      }
      return;
    }
    ValidatableResponse response = contentType == null
        ? ValidatableResponse.create(r.statusCode(), headers)
        : ValidatableResponse.create(r.statusCode(), headers, Buffer.buffer(r.body()), contentType);
    try {
      validator.validate(response, operationId).toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    } catch (java.util.concurrent.ExecutionException e) {
      throw new AssertionError("response of " + operationId + " does not match openapi.yaml: " + r.statusCode()
          + " " + r.body() + " -> " + e.getCause().getMessage(), e.getCause());
    }
  }

  @Override
  public void close() {
    vertx.close();
  }
}
