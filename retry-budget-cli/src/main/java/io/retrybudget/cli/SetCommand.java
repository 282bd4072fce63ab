package io.retrybudget.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.math.BigDecimal;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;
import picocli.CommandLine.Spec;

/**
 * {@code retry-budget set NAME [--ratio R] [--floor N] [--window S] [--mode M]}: sets a budget's
 * configuration (PUT /v1/budgets/{name}); what is left out keeps its value, a new budget gets the
 * defaults for it. The coordinator validates; its error names the field and the CLI the option.
 */
@Command(name = "set", description = {"Set a budget's configuration, creating the budget if needed. Options left out "
    + "keep their values (a new budget: ratio 0.1, floor 10/s, window 10 s, enforce). Needs the token."})
final class SetCommand implements Callable<Integer> {
  /** The modes the coordinator accepts, offered by shell completion. */
  static final class Modes implements Iterable<String> {
    @Override
    public java.util.Iterator<String> iterator() {
      return List.of("enforce", "shadow").iterator();
    }
  }

  /** A decimal number, with a message that says so (BigDecimal's own is about digits and exponents). */
  static final class Decimal implements CommandLine.ITypeConverter<BigDecimal> {
    @Override
    public BigDecimal convert(String value) {
      try {
        return new BigDecimal(value);
      } catch (NumberFormatException e) {
        throw new CommandLine.TypeConversionException("'" + value + "' is not a decimal number");
      }
    }
  }

  @ParentCommand RetryBudgetCli root;
  @Spec CommandSpec spec;

  @Parameters(paramLabel = "NAME", description = "the budget: [A-Za-z0-9._-]{1,100}, e.g. payments-api")
  String name;

  @Option(names = "--ratio", paramLabel = "R", converter = Decimal.class, description = "retries allowed per first attempt, 0.000001 to 1 (ratio)")
  BigDecimal ratio;

  @Option(names = "--floor", paramLabel = "N",
      description = "retries a second always allowed to the whole fleet, 0 to 1000000 (min_retries_per_second)")
  Long floor;

  @Option(names = "--window", paramLabel = "S", description = "the sliding window in seconds, 1 to 3600 (window_seconds)")
  Long window;

  @Option(names = "--mode", paramLabel = "MODE", completionCandidates = Modes.class,
      description = "enforce (deny when spent) or shadow (count would-deny only) (mode)")
  String mode;

  @Option(names = "--max-calls", paramLabel = "N",
      description = "ceiling on script calls a second for the budget's fleet, 1 to 1000000 (max_calls_per_second)")
  Long maxCalls;

  @Override
  public Integer call() {
    ObjectNode fields = CoordinatorClient.object();
    if (ratio != null) {
      fields.put("ratio", ratio);
    }
    if (floor != null) {
      fields.put("min_retries_per_second", floor);
    }
    if (window != null) {
      fields.put("window_seconds", window);
    }
    if (mode != null) {
      fields.put("mode", mode);
    }
    if (maxCalls != null) {
      fields.put("max_calls_per_second", maxCalls);
    }
    if (fields.isEmpty()) {
      throw root.usage("set: give at least one of --ratio, --floor, --window, --mode, --max-calls");
    }
    JsonNode budget = root.client().put(name, fields);
    spec.commandLine().getOut().print(root.json() ? CoordinatorClient.compact(budget) + "\n"
        : BudgetViews.detail(budget, root.context().colour()));
    spec.commandLine().getOut().flush();
    return 0;
  }
}
