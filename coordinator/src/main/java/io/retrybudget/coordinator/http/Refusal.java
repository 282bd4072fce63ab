package io.retrybudget.coordinator.http;

import io.netty.buffer.Unpooled;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import io.retrybudget.coordinator.api.Problem;
import java.nio.charset.StandardCharsets;

/** A request answered by the connection guard, before Vert.x; its body a problem ({@link Problem}) about {@code instance}. */
record Refusal(HttpResponseStatus status, String field, String message, boolean keepAlive, String allow,
    String instance) {
  Refusal(HttpResponseStatus status, String field, String message, boolean keepAlive) {
    this(status, field, message, keepAlive, null, null);
  }

  Refusal(HttpResponseStatus status, String field, String message, boolean keepAlive, String allow) {
    this(status, field, message, keepAlive, allow, null);
  }

  Refusal closing() {
    return new Refusal(status, field, message, false, allow, instance);
  }

  Refusal at(String target) {
    return new Refusal(status, field, message, keepAlive, allow, target);
  }

  String json() {
    // the only 503 here: the connection cap (Redis's 503s come from the routes)
    Problem.Type type = status.code() == 503 ? Problem.Type.OVERLOADED : Problem.Type.forStatus(status.code());
    return Problem.of(type, status.code(), field, message, instance).encode();
  }

  /** The whole answer: the problem (none for 204), Allow when set, Connection: close unless kept alive. */
  DefaultFullHttpResponse response() {
    byte[] body = status.code() == 204 ? new byte[0] : json().getBytes(StandardCharsets.UTF_8);
    DefaultFullHttpResponse res = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, status,
        Unpooled.wrappedBuffer(body));
    HttpHeaders h = res.headers();
    if (body.length > 0) {
      h.set(HttpHeaderNames.CONTENT_TYPE, Problem.CONTENT_TYPE);
    }
    h.set(HttpHeaderNames.CONTENT_LENGTH, body.length);
    if (allow != null) {
      h.set(HttpHeaderNames.ALLOW, allow);
    }
    if (!keepAlive) {
      h.set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
    }
    if (status.equals(HttpResponseStatus.SERVICE_UNAVAILABLE)) {
      h.set(HttpHeaderNames.RETRY_AFTER, "1");
    }
    return res;
  }
}
