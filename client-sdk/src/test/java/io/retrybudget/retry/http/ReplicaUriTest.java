package io.retrybudget.retry.http;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.net.URI;
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
}
