package io.retrybudget.cli;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;
import picocli.CommandLine.Spec;

/** {@code retry-budget get NAME}: one budget's configuration and window (GET /v1/budgets/{name}). */
@Command(name = "get", description = "One budget's configuration and window, bucket by bucket.")
final class GetCommand implements Callable<Integer> {
  @ParentCommand RetryBudgetCli root;
  @Spec CommandSpec spec;

  @Parameters(paramLabel = "NAME", description = "the budget (the dependency it protects, e.g. payments-api)")
  String name;

  @Override
  public Integer call() {
    JsonNode budget = root.client().get(name);
    spec.commandLine().getOut().print(root.json() ? CoordinatorClient.compact(budget) + "\n"
        : BudgetViews.detail(budget, root.context().colour()));
    spec.commandLine().getOut().flush();
    return 0;
  }
}
