package io.retrybudget.coordinator.api;

import io.retrybudget.coordinator.http.StrictJson;
import io.retrybudget.coordinator.budgets.ConfigUpdate;
import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.BudgetNames;
import io.retrybudget.budget.redis.protocol.BudgetCall;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.Set;

/** Turns request bodies into validated values; every refusal names its field. Pure. */
public final class RequestParser {
  /**
   * The most first attempts one POST counts: the trust model's smallest cap on one call's report (the
   * scripts believe at least this much of any budget's call), so a POST is never counted short; what
   * many POSTs add up to is capped per bucket by the scripts (lua/README.md, "The trust model").
   */
  static final long MAX_REQUEST_COUNT = BudgetCall.MIN_CALL_CAP;
  static final int MAX_PERMIT_COUNT = 1_000;
  private static final Set<String> CONFIG_FIELDS = Set.of("ratio", "window_seconds", "min_retries_per_second", "mode",
      "max_calls_per_second");
  private static final Set<String> COUNT_FIELDS = Set.of("count");
  private static final BigDecimal HALF_PPM = new BigDecimal("0.0000005");

  private RequestParser() {}

  /** The {@code charset} parameter of a Content-Type, unquoted, or null. */
  static String charset(String contentType) {
    if (contentType == null) {
      return null;
    }
    String[] parts = contentType.split(";");
    for (int i = 1; i < parts.length; i++) {
      String p = parts[i].strip();
      int eq = p.indexOf('=');
      if (eq > 0 && p.substring(0, eq).strip().equalsIgnoreCase("charset")) {
        String v = p.substring(eq + 1).strip();
        return v.length() >= 2 && v.startsWith("\"") && v.endsWith("\"") ? v.substring(1, v.length() - 1) : v;
      }
    }
    return null;
  }

  /** The first field of a raw query string whose name is empty ({@code =1}), or null. */
  static String unnamedQueryField(String query) {
    for (String field : query.split("&", -1)) {
      if (field.startsWith("=")) {
        return field;
      }
    }
    return null;
  }

  public static String name(String raw) {
    if (!BudgetNames.isValid(raw)) {
      throw new BadRequestException("name", "name must match [A-Za-z0-9._-]{1,100}");
    }
    return raw;
  }

  public static JsonObject object(Buffer body) {
    if (body == null || body.length() == 0) {
      throw new BadRequestException("body", "a JSON object is required");
    }
    if (notUtf8(body)) {
      throw new BadRequestException(415, "body", "JSON bodies are UTF-8 (RFC 8259 section 8.1); this one is UTF-16 "
          + "or UTF-32 (a byte-order mark or zero bytes at its start)");
    }
    Object parsed;
    try {
      parsed = StrictJson.parse(body.getBytes());
    } catch (StrictJson.Malformed e) {
      throw new BadRequestException(e.field() != null ? e.field() : "body", e.getMessage());
    }
    if (!(parsed instanceof JsonObject o)) {
      throw new BadRequestException("body", "a JSON object is required");
    }
    return o;
  }

  /**
   * What the JSON parser would otherwise detect and decode as UTF-16 or UTF-32: a UTF-16 byte-order
   * mark, or a zero byte among the first four (a JSON text starts with an ASCII character, which
   * is a zero byte and another in UTF-16 and three zeros and another in UTF-32).
   */
  private static boolean notUtf8(Buffer body) {
    int n = Math.min(4, body.length());
    if (n >= 2 && ((body.getByte(0) == (byte) 0xFE && body.getByte(1) == (byte) 0xFF)
        || (body.getByte(0) == (byte) 0xFF && body.getByte(1) == (byte) 0xFE))) {
      return true;
    }
    for (int i = 0; i < n; i++) {
      if (body.getByte(i) == 0) {
        return true;
      }
    }
    return false;
  }

  public static ConfigUpdate configUpdate(JsonObject o) {
    rejectUnknown(o, CONFIG_FIELDS);
    if (o.isEmpty()) {
      throw new BadRequestException("body", "give at least one of ratio, window_seconds, min_retries_per_second, mode, max_calls_per_second");
    }
    Long ratioPpm = null;
    if (o.containsKey("ratio")) {
      BigDecimal ratio = number(o, "ratio");
      if (ratio.signum() <= 0 || ratio.compareTo(BigDecimal.ONE) > 0) {
        throw new BadRequestException("ratio", "ratio must be in (0, 1]");
      }
      if (ratio.compareTo(HALF_PPM) < 0) {
        // before any rounding: 1e-999999999 must not be rescaled digit by digit
        throw new BadRequestException("ratio", "ratio must be at least 0.000001");
      }
      long ppm = ratio.movePointRight(6).setScale(0, java.math.RoundingMode.HALF_UP).longValue();
      if (ppm < 1) {
        throw new BadRequestException("ratio", "ratio must be at least 0.000001");
      }
      ratioPpm = ppm;
    }
    Integer window = o.containsKey("window_seconds")
        ? (int) integer(o, "window_seconds", 1, BudgetConfig.MAX_WINDOW_SECONDS) : null;
    Integer floor = o.containsKey("min_retries_per_second")
        ? (int) integer(o, "min_retries_per_second", 0, BudgetConfig.MAX_MIN_RETRIES_PER_SECOND) : null;
    String mode = null;
    if (o.containsKey("mode")) {
      Object m = o.getValue("mode");
      if (!(m instanceof String s) || !(s.equals("enforce") || s.equals("shadow"))) {
        throw new BadRequestException("mode", "mode must be \"enforce\" or \"shadow\"");
      }
      mode = (String) m;
    }
    Integer maxCalls = o.containsKey("max_calls_per_second")
        ? (int) integer(o, "max_calls_per_second", 1, BudgetConfig.MAX_MAX_CALLS_PER_SECOND) : null;
    return new ConfigUpdate(ratioPpm, window, floor, mode, maxCalls);
  }

  static long count(JsonObject o, long max) {
    rejectUnknown(o, COUNT_FIELDS);
    if (!o.containsKey("count")) {
      throw new BadRequestException("count", "count is required");
    }
    return integer(o, "count", 1, max);
  }

  private static void rejectUnknown(JsonObject o, Set<String> allowed) {
    for (String key : o.fieldNames()) {
      if (!allowed.contains(key)) {
        throw new BadRequestException(key, "unknown field " + key);
      }
    }
  }

  private static BigDecimal number(JsonObject o, String field) {
    Object v = o.getValue(field);
    if (v instanceof BigDecimal d) {
      return d;
    }
    if (v instanceof Double || v instanceof Float) {
      double d = ((Number) v).doubleValue();
      if (!Double.isFinite(d)) {
        throw new BadRequestException(field, field + " must be a finite number");
      }
      return BigDecimal.valueOf(d);
    }
    if (v instanceof BigInteger b) {
      return new BigDecimal(b);
    }
    if (v instanceof Number n) {
      return BigDecimal.valueOf(n.longValue());
    }
    throw new BadRequestException(field, field + " must be a number");
  }

  private static long integer(JsonObject o, String field, long min, long max) {
    BigDecimal d = number(o, field);
    // range first: 1e999999999 must not be expanded into a BigInteger
    boolean integral = d.signum() == 0 || d.stripTrailingZeros().scale() <= 0;
    if (d.compareTo(BigDecimal.valueOf(min)) < 0 || d.compareTo(BigDecimal.valueOf(max)) > 0) {
      throw new BadRequestException(field, integral ? field + " must be in [" + min + ", " + max + "]"
          : field + " must be an integer");
    }
    if (!integral) {
      throw new BadRequestException(field, field + " must be an integer");
    }
    return d.longValueExact();
  }
}
