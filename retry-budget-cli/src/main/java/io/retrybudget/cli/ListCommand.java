package io.retrybudget.cli;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.ParentCommand;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/** {@code retry-budget list}: every budget with its status (GET /v1/budgets). */
@Command(name = "list", description = "Every budget with its status; exhausted ones highlighted on a terminal.")
final class ListCommand implements Callable<Integer> {
  @ParentCommand RetryBudgetCli root;
  @Spec CommandSpec spec;

  @Override
  public Integer call() {
    JsonNode listing = root.client().list();
    spec.commandLine().getOut().print(root.json() ? CoordinatorClient.compact(listing) + "\n"
        : BudgetViews.listing(listing, root.context().colour()));
    spec.commandLine().getOut().flush();
    return 0;
  }
}
