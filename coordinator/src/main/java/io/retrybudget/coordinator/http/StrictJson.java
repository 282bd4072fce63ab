package io.retrybudget.coordinator.http;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.core.exc.StreamConstraintsException;
import com.fasterxml.jackson.core.json.JsonReadFeature;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.IOException;

/**
 * JSON exactly as RFC 8259 writes it: no comments, no trailing commas, no single quotes, no
 * duplicate keys (a duplicate is refused, never "last one wins"), nothing after the value, nesting
 * at most 64 deep. Integers become Long or BigInteger, other numbers BigDecimal, so no value is
 * rounded before it is validated. Pure.
 */
public final class StrictJson {
  static final int MAX_DEPTH = 64;
  private static final JsonFactory FACTORY = JsonFactory.builder()
      .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
      .disable(JsonReadFeature.ALLOW_JAVA_COMMENTS)
      .disable(JsonReadFeature.ALLOW_YAML_COMMENTS)
      .disable(JsonReadFeature.ALLOW_SINGLE_QUOTES)
      .disable(JsonReadFeature.ALLOW_TRAILING_COMMA)
      .disable(JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS)
      .streamReadConstraints(StreamReadConstraints.builder().maxNestingDepth(MAX_DEPTH).build())
      .build();

  /** A refusal, with what was wrong. */
  public static final class Malformed extends Exception {
    private final String field;

    Malformed(String message) {
      this(message, null);
    }

    Malformed(String message, String field) {
      super(message, null, false, false);
      this.field = field;
    }

    /** The key a duplicate was found for, else null. */
    public String field() {
      return field;
    }
  }

  private StrictJson() {}

  /** The one JSON value of {@code bytes}: JsonObject, JsonArray, String, Long, BigInteger, BigDecimal, Boolean or null. */
  public static Object parse(byte[] bytes) throws Malformed {
    try (JsonParser p = FACTORY.createParser(bytes)) {
      JsonToken first = p.nextToken();
      if (first == null) {
        throw new Malformed("empty body");
      }
      Object value;
      try {
        value = value(p, first);
      } catch (NumberFormatException | ArithmeticException e) {
        // an exponent beyond what BigDecimal holds (1e9999999999): out of range, whatever the field
        String field = p.currentName();
        throw new Malformed("number out of range" + (field == null ? "" : " in \"" + field + "\""), field);
      }
      if (p.nextToken() != null) {
        throw new Malformed("text after the JSON value");
      }
      return value;
    } catch (StreamConstraintsException e) {
      throw new Malformed("JSON nested deeper than " + MAX_DEPTH + " levels or too long a number or string");
    } catch (IOException e) {
      String m = e.getMessage() == null ? "" : e.getMessage();
      if (m.startsWith("Duplicate field")) {
        String key = duplicateKey(m);
        throw new Malformed("duplicate key \"" + key + "\"", key.isEmpty() ? null : key);
      }
      throw new Malformed("malformed JSON");
    }
  }

  private static String duplicateKey(String message) {
    int a = message.indexOf('\'');
    int b = a < 0 ? -1 : message.indexOf('\'', a + 1);
    return a >= 0 && b > a ? message.substring(a + 1, b) : "";
  }

  private static Object value(JsonParser p, JsonToken t) throws IOException {
    switch (t) {
      case START_OBJECT: {
        JsonObject o = new JsonObject();
        for (JsonToken k = p.nextToken(); k != JsonToken.END_OBJECT; k = p.nextToken()) {
          String name = p.currentName();
          o.put(name, value(p, p.nextToken()));
        }
        return o;
      }
      case START_ARRAY: {
        JsonArray a = new JsonArray();
        for (JsonToken e = p.nextToken(); e != JsonToken.END_ARRAY; e = p.nextToken()) {
          a.add(value(p, e));
        }
        return a;
      }
      case VALUE_STRING:
        return p.getText();
      case VALUE_NUMBER_INT:
        return p.getNumberType() == JsonParser.NumberType.BIG_INTEGER ? p.getBigIntegerValue() : (Object) p.getLongValue();
      case VALUE_NUMBER_FLOAT:
        return p.getDecimalValue();
      case VALUE_TRUE:
        return Boolean.TRUE;
      case VALUE_FALSE:
        return Boolean.FALSE;
      case VALUE_NULL:
        return null;
      default:
        throw new IOException("unexpected token " + t);
    }
  }
}
