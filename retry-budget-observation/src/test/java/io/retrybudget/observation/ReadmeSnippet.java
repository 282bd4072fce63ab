package io.retrybudget.observation;

import io.micrometer.observation.ObservationRegistry;
import io.retrybudget.budget.RetryBudget;
import io.retrybudget.retry.RetryExecutor;
import io.retrybudget.retry.RetryPolicy;
import io.retrybudget.retry.http.RetryingHttpClient;
import java.io.IOException;
import java.net.http.HttpClient;

/** The README's snippet, compiled; {@link ReadmeSnippetTest} checks the README shows it as it is and runs it. */
final class ReadmeSnippet {
  interface Client {
    String fetch() throws IOException;
  }

  private ReadmeSnippet() {}

  static String run(ObservationRegistry registry, RetryBudget payments, Client client) throws Exception {
    // README:begin
    // registry: the application's ObservationRegistry (Spring Boot's, or one with a tracing handler)
    ObservationRetryListener observed = ObservationRetryListener.builder(registry, "payments-api").build();

    RetryExecutor executor = RetryExecutor.builder(RetryPolicy.builder().maxAttempts(3).build())
        .budget(payments)
        .listener(observed)                       // every call: a retry.call with a retry.attempt per attempt
        .build();
    String body = executor.call(() -> client.fetch());

    RetryingHttpClient http = RetryingHttpClient.builder(HttpClient.newHttpClient())
        .budget(payments)
        .listener(observed)                       // the same for the SDK's HTTP client and every integration
        .build();
    // README:end
    return body + http;
  }
}
