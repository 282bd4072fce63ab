package io.retrybudget.cli;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Flow;

/**
 * A response body handler that keeps at most {@code maxBytes} bytes: a longer body (announced by
 * Content-Length or streamed) cancels the exchange and fails with {@link TooLargeException}, so a
 * misbehaving server or proxy cannot make the CLI hold an unbounded body in memory.
 */
final class BoundedBody implements HttpResponse.BodyHandler<byte[]> {
  /** The body was longer than the cap. */
  static final class TooLargeException extends IOException {
    TooLargeException(long maxBytes) {
      super("response body larger than " + maxBytes + " bytes");
    }
  }

  private final long maxBytes;

  BoundedBody(long maxBytes) {
    if (maxBytes < 1) {
      throw new IllegalArgumentException("maxBytes must be at least 1, was " + maxBytes);
    }
    this.maxBytes = maxBytes;
  }

  @Override
  public HttpResponse.BodySubscriber<byte[]> apply(HttpResponse.ResponseInfo info) {
    return new Subscriber(maxBytes, info.headers().firstValueAsLong("Content-Length").orElse(-1));
  }

  private static final class Subscriber implements HttpResponse.BodySubscriber<byte[]> {
    private final CompletableFuture<byte[]> result = new CompletableFuture<>();
    private final ByteArrayOutputStream buffer = new ByteArrayOutputStream();
    private final long maxBytes;
    private final long announced;
    private Flow.Subscription subscription;

    Subscriber(long maxBytes, long announced) {
      this.maxBytes = maxBytes;
      this.announced = announced;
    }

    @Override
    public CompletionStage<byte[]> getBody() {
      return result;
    }

    @Override
    public void onSubscribe(Flow.Subscription s) {
      subscription = s;
      if (announced > maxBytes) {
        s.cancel();
        result.completeExceptionally(new TooLargeException(maxBytes));
        return;
      }
      s.request(Long.MAX_VALUE);
    }

    @Override
    public void onNext(List<ByteBuffer> items) {
      if (result.isDone()) {
        return;
      }
      for (ByteBuffer item : items) {
        if (buffer.size() + (long) item.remaining() > maxBytes) {
          subscription.cancel();
          result.completeExceptionally(new TooLargeException(maxBytes));
          return;
        }
        byte[] bytes = new byte[item.remaining()];
        item.get(bytes);
        buffer.write(bytes, 0, bytes.length);
      }
    }

    @Override
    public void onError(Throwable t) {
      result.completeExceptionally(t);
    }

    @Override
    public void onComplete() {
      result.complete(buffer.toByteArray());
    }
  }
}
