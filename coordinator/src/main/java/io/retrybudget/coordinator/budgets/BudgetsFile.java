package io.retrybudget.coordinator.budgets;

import io.retrybudget.coordinator.api.BadRequestException;
import io.retrybudget.coordinator.api.RequestParser;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The declarative budget configuration ({@code COORDINATOR_BUDGETS_FILE}), JSON:
 * <pre>{"budgets": {"payments-api": {"ratio": 0.1, "window_seconds": 10,
 *                                    "min_retries_per_second": 10, "mode": "enforce"}}}</pre>
 * Validated like a PUT body; a bad file stops the coordinator at start with the budget and field.
 */
public final class BudgetsFile {
  private BudgetsFile() {}

  public static Map<String, ConfigUpdate> read(Path file) throws IOException {
    JsonObject root;
    try {
      root = RequestParser.object(Buffer.buffer(Files.readAllBytes(file)));
    } catch (BadRequestException e) {
      throw new IllegalArgumentException(file + ": " + e.getMessage());
    }
    Object budgets = root.getValue("budgets");
    if (!(budgets instanceof JsonObject all) || root.size() != 1) {
      throw new IllegalArgumentException(file + ": expected {\"budgets\": {name: {...}}}");
    }
    Map<String, ConfigUpdate> out = new LinkedHashMap<>();
    for (String name : all.fieldNames()) {
      try {
        RequestParser.name(name);
        Object entry = all.getValue(name);
        if (!(entry instanceof JsonObject o)) {
          throw new BadRequestException("budgets." + name, "must be an object");
        }
        out.put(name, RequestParser.configUpdate(o));
      } catch (BadRequestException e) {
        throw new IllegalArgumentException(file + ": budget '" + name + "', field " + e.field() + ": " + e.getMessage());
      }
    }
    return out;
  }
}
