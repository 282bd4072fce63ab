package io.retrybudget.observation;

import io.micrometer.observation.ObservationRegistry;
import io.micrometer.tracing.handler.DefaultTracingObservationHandler;
import io.micrometer.tracing.otel.bridge.OtelBaggageManager;
import io.micrometer.tracing.otel.bridge.OtelCurrentTraceContext;
import io.micrometer.tracing.otel.bridge.OtelTracer;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import java.util.Comparator;
import java.util.List;

/**
 * An observation registry whose observations become OpenTelemetry spans through Micrometer
 * Tracing's OTel bridge, exported to OTel's in-memory exporter: what an application with
 * micrometer-tracing-bridge-otel gets.
 */
final class OtelTracing implements AutoCloseable {
  final InMemorySpanExporter exporter = InMemorySpanExporter.create();
  final SdkTracerProvider provider = SdkTracerProvider.builder()
      .addSpanProcessor(SimpleSpanProcessor.create(exporter)).build();
  final OtelTracer tracer;
  final ObservationRegistry registry = ObservationRegistry.create();

  OtelTracing() {
    OtelCurrentTraceContext context = new OtelCurrentTraceContext();
    tracer = new OtelTracer(provider.get("retry-budget-observation-test"), context, event -> { },
        new OtelBaggageManager(context, List.of(), List.of()));
    registry.observationConfig().observationHandler(new DefaultTracingObservationHandler(tracer));
  }

  /** The spans ended so far, by start time. */
  List<SpanData> spans() {
    return exporter.getFinishedSpanItems().stream()
        .sorted(Comparator.comparingLong(SpanData::getStartEpochNanos)).toList();
  }

  /**
   * The call's span, once ended: an asynchronous call tells its listeners right after it completes
   * the caller's future, on the thread that completed it, so the span may end a moment after the
   * caller has its answer. Waits for it at most 10 s (it is microseconds behind, at any load).
   */
  SpanData awaitCall() throws InterruptedException {
    long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(10);
    while (true) {
      List<SpanData> calls = named(ObservationRetryListener.CALL);
      if (calls.size() == 1 || System.nanoTime() - deadline > 0) {
        if (calls.size() != 1) {
          throw new AssertionError("one call span: " + spans());
        }
        return calls.get(0);
      }
      Thread.sleep(1);
    }
  }

  List<SpanData> named(String name) {
    return spans().stream().filter(s -> s.getName().equals(name)).toList();
  }

  @Override
  public void close() {
    provider.close();
  }
}
