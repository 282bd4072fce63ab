package io.retrybudget.cli;

import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;
import picocli.CommandLine.Spec;

/** {@code retry-budget delete NAME}: removes a budget atomically (DELETE /v1/budgets/{name}). */
@Command(name = "delete", description = "Remove a budget: configuration, window and clients, atomically. Needs the token.")
final class DeleteCommand implements Callable<Integer> {
  @ParentCommand RetryBudgetCli root;
  @Spec CommandSpec spec;

  @Parameters(paramLabel = "NAME", description = "the budget to remove")
  String name;

  @Override
  public Integer call() {
    root.client().delete(name);
    if (root.json()) {
      spec.commandLine().getOut().println(CoordinatorClient.compact(
          CoordinatorClient.object().put("name", name).put("deleted", true)));
    } else {
      spec.commandLine().getOut().println("deleted " + Text.clean(name));
    }
    spec.commandLine().getOut().flush();
    return 0;
  }
}
