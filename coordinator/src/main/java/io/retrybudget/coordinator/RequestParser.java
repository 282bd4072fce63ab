package io.retrybudget.coordinator;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.BudgetNames;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.Set;

/** Turns request bodies into validated values; every refusal names its field. Pure. */
final class RequestParser {
  static final int MAX_REQUEST_COUNT = 1_000_000;
  static final int MAX_PERMIT_COUNT = 1_000;
  private static final Set<String> CONFIG_FIELDS = Set.of("ratio", "window_seconds", "min_retries_per_second", "mode",
      "max_calls_per_second");
  private static final Set<String> COUNT_FIELDS = Set.of("count");
  private static final BigDecimal HALF_PPM = new BigDecimal("0.0000005");

  private RequestParser() {}

  static String name(String raw) {
    if (!BudgetNames.isValid(raw)) {
      throw new BadRequestException("name", "name must match [A-Za-z0-9._-]{1,100}");
    }
    return raw;
  }

  static JsonObject object(Buffer body) {
    if (body == null || body.length() == 0) {
      throw new BadRequestException("body", "a JSON object is required");
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

  static ConfigUpdate configUpdate(JsonObject o) {
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
