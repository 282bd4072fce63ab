package io.retrybudget.server;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The handler behind both adapters' test servers. The request body steers it:
 * {@code {"amount": n, "status": s, "size": z, "hold": true, "fail": true, "invalid": true}}. Every
 * answer carries the execution's fencing token in {@code X-Fence} (none when unguarded).
 */
final class TestPayments {
  final Map<String, AtomicInteger> executions = new ConcurrentHashMap<>();
  final AtomicInteger total = new AtomicInteger();
  final Map<String, CompletableFuture<Void>> holds = new ConcurrentHashMap<>();

  int executions(String key) {
    AtomicInteger n = executions.get(key);
    return n == null ? 0 : n.get();
  }

  /** Where a held request waits until {@link #release}. */
  CompletableFuture<Void> hold(String key) {
    return holds.computeIfAbsent(key, k -> new CompletableFuture<>());
  }

  void release(String key) {
    hold(key).complete(null);
  }

  /** Counts the execution; null when the body asks to hold (then call {@link #answer} after the hold). */
  boolean shouldHold(String body) {
    return body.contains("\"hold\":true");
  }

  /**
   * Executes: counts, then answers (or throws when the body says fail, after counting: a side
   * effect then a failure). {@code "invalid":true} is refused with 400 before executing (not
   * counted), said so through {@code context}.
   */
  StoredResponse answer(String key, String body, IdempotencyContext context) {
    if (body.contains("\"invalid\":true")) {
      context.rejectedBeforeExecuting();
      return Problems.of(400, "invalid-amount", "Invalid amount", "amount is missing");
    }
    executions.computeIfAbsent(String.valueOf(key), k -> new AtomicInteger()).incrementAndGet();
    total.incrementAndGet();
    if (body.contains("\"fail\":true")) {
      throw new IllegalStateException("the handler failed");
    }
    int status = number(body, "status", 201);
    int size = number(body, "size", 0);
    String id = UUID.randomUUID().toString();
    String json = "{\"charge_id\":\"" + id + "\",\"amount\":" + number(body, "amount", 0) + ",\"pad\":\"" + "x".repeat(size) + "\"}";
    return new StoredResponse(status, List.of(
        new StoredResponse.Header("Content-Type", "application/json"),
        new StoredResponse.Header("Location", "/payments/" + id),
        new StoredResponse.Header("X-Not-Stored", "v"),
        new StoredResponse.Header("X-Fence", context.fencingToken().isPresent() ? Long.toString(context.fencingToken().getAsLong()) : "none")), json.getBytes(StandardCharsets.UTF_8));
  }

  private static int number(String body, String field, int otherwise) {
    Matcher m = Pattern.compile("\"" + field + "\":(\\d+)").matcher(body);
    return m.find() ? Integer.parseInt(m.group(1)) : otherwise;
  }
}
