package io.retrybudget.grpc;

import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.ServerCalls;
import io.grpc.stub.StreamObserver;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;

/** A real gRPC server on loopback (Netty) with one hand-written unary method, scripted per request. */
final class EchoService implements AutoCloseable {
  static final MethodDescriptor.Marshaller<String> UTF8 = new MethodDescriptor.Marshaller<>() {
    @Override
    public InputStream stream(String value) {
      return new ByteArrayInputStream(value.getBytes(StandardCharsets.UTF_8));
    }

    @Override
    public String parse(InputStream stream) {
      try {
        return new String(stream.readAllBytes(), StandardCharsets.UTF_8);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
  };

  static final MethodDescriptor<String, String> ECHO = MethodDescriptor.<String, String>newBuilder()
      .setType(MethodDescriptor.MethodType.UNARY)
      .setFullMethodName(MethodDescriptor.generateFullMethodName("test.Echo", "Echo"))
      .setRequestMarshaller(UTF8)
      .setResponseMarshaller(UTF8)
      .build();

  /** Server-streaming: the request "n" is answered with the messages "0" .. "n-1" unless scripted. */
  static final MethodDescriptor<String, String> COUNT = MethodDescriptor.<String, String>newBuilder()
      .setType(MethodDescriptor.MethodType.SERVER_STREAMING)
      .setFullMethodName(MethodDescriptor.generateFullMethodName("test.Echo", "Count"))
      .setRequestMarshaller(UTF8)
      .setResponseMarshaller(UTF8)
      .build();

  static final Metadata.Key<String> PREVIOUS = RetryBudgetClientInterceptor.PREVIOUS_ATTEMPTS;
  /** While a request is handled: its grpc-previous-rpc-attempts header, "-" when absent. */
  static final io.grpc.Context.Key<String> ATTEMPT = io.grpc.Context.key("previous-attempts");

  final ConcurrentLinkedDeque<BiConsumer<String, StreamObserver<String>>> script = new ConcurrentLinkedDeque<>();
  volatile BiConsumer<String, StreamObserver<String>> otherwise = (req, out) -> {
    out.onNext("echo " + req);
    out.onCompleted();
  };
  /** The grpc-previous-rpc-attempts header of every request, "-" when absent. */
  final List<String> previousAttempts = new CopyOnWriteArrayList<>();
  /** The deadline every request arrived with (from its grpc-timeout), in ms left; -1 when none. */
  final List<Long> deadlineMillis = new CopyOnWriteArrayList<>();
  final Server server;

  EchoService() throws IOException {
    ServerServiceDefinition service = ServerServiceDefinition.builder("test.Echo")
        .addMethod(ECHO, ServerCalls.asyncUnaryCall((String req, StreamObserver<String> out) -> {
          BiConsumer<String, StreamObserver<String>> next = script.poll();
          (next != null ? next : otherwise).accept(req, out);
        }))
        .addMethod(COUNT, ServerCalls.asyncServerStreamingCall((String req, StreamObserver<String> out) -> {
          BiConsumer<String, StreamObserver<String>> next = script.poll();
          (next != null ? next : COUNTING).accept(req, out);
        }))
        .build();
    ServerInterceptor recorder = new ServerInterceptor() {
      @Override
      public <ReqT, RespT> ServerCall.Listener<ReqT> interceptCall(ServerCall<ReqT, RespT> call, Metadata headers,
          ServerCallHandler<ReqT, RespT> next) {
        String previous = headers.get(PREVIOUS);
        io.grpc.Deadline deadline = io.grpc.Context.current().getDeadline();
        deadlineMillis.add(deadline == null ? -1L : deadline.timeRemaining(TimeUnit.MILLISECONDS));
        previousAttempts.add(previous == null ? "-" : previous);
        return io.grpc.Contexts.interceptCall(io.grpc.Context.current().withValue(ATTEMPT, previous == null ? "-" : previous),
            call, headers, next);
      }
    };
    server = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
        .addService(ServerInterceptors.intercept(service, recorder))
        .build()
        .start();
  }

  int port() {
    return server.getPort();
  }

  int requests() {
    return previousAttempts.size();
  }

  static BiConsumer<String, StreamObserver<String>> fail(Status status, String... trailers) {
    return (req, out) -> {
      Metadata t = new Metadata();
      for (int i = 0; i < trailers.length; i += 2) {
        t.put(Metadata.Key.of(trailers[i], Metadata.ASCII_STRING_MARSHALLER), trailers[i + 1]);
      }
      out.onError(status.asRuntimeException(t));
    };
  }

  static final BiConsumer<String, StreamObserver<String>> HANG = (req, out) -> { };

  /** "n": the messages "0" .. "n-1", then OK. */
  static final BiConsumer<String, StreamObserver<String>> COUNTING = (req, out) -> {
    for (int i = 0; i < Integer.parseInt(req); i++) {
      out.onNext(Integer.toString(i));
    }
    out.onCompleted();
  };

  /** Streams {@code sent} messages, then fails with {@code status}. */
  static BiConsumer<String, StreamObserver<String>> failAfter(int sent, Status status) {
    return (req, out) -> {
      for (int i = 0; i < sent; i++) {
        out.onNext(Integer.toString(i));
      }
      out.onError(status.asRuntimeException());
    };
  }

  @Override
  public void close() throws InterruptedException {
    server.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
  }
}
