package io.retrybudget.coordinator;

import io.retrybudget.coordinator.api.Problem;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vertx.core.json.JsonObject;

/**
 * What every error answer of the coordinator must be: an RFC 9457 problem, {@code
 * application/problem+json}, with {@code type}, {@code title}, {@code status}, {@code detail} and
 * {@code instance} (or none), and the extension members {@code error} (= detail) and {@code field}.
 * The expected values are written out here, not taken from {@link Problem}, so a wrong type or
 * title there fails.
 */
final class ProblemAssert {
  private ProblemAssert() {}

  /**
   * @param type the last part of the type URN
   * @param title the title that type must have
   * @param field the field named, null for none
   * @param instance the request path named, null for none
   * @return the problem, for checks of further members
   */
  static JsonObject assertProblem(int status, String contentType, String body, int expectedStatus, String type,
      String title, String field, String instance) {
    String what = status + " " + contentType + " " + body;
    assertEquals(expectedStatus, status, what);
    assertEquals("application/problem+json", contentType, what);
    JsonObject p = new JsonObject(body);
    assertEquals("urn:retrybudget:problem:" + type, p.getString("type"), what);
    assertEquals(title, p.getString("title"), what);
    assertEquals(expectedStatus, p.getInteger("status"), what);
    String detail = p.getString("detail");
    assertTrue(detail != null && !detail.isBlank(), what);
    assertEquals(detail, p.getString("error"), "error repeats detail: " + what);
    if (field == null) {
      assertFalse(p.containsKey("field"), what);
    } else {
      assertEquals(field, p.getString("field"), what);
    }
    if (instance == null) {
      assertFalse(p.containsKey("instance"), what);
    } else {
      assertEquals(instance, p.getString("instance"), what);
    }
    return p;
  }

  static JsonObject assertProblem(RawHttp.Answer a, int status, String type, String title, String field,
      String instance) {
    return assertProblem(a.status(), a.header("content-type"), a.body(), status, type, title, field, instance);
  }

  static JsonObject assertProblem(ApiClient.Response r, int status, String type, String title, String field,
      String instance) {
    return assertProblem(r.status(), r.raw().headers().firstValue("content-type").orElse(null), r.body(), status, type,
        title, field, instance);
  }
}
