package io.retrybudget.cli;

import java.util.concurrent.Callable;
import picocli.AutoComplete;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/** {@code retry-budget completion}: prints the bash (and zsh, via bashcompinit) completion script. */
@Command(name = "completion", description = {"Print the bash completion script of retry-budget.",
    "Use it with: source <(retry-budget completion)"})
final class CompletionCommand implements Callable<Integer> {
  @Spec CommandSpec spec;

  @Override
  public Integer call() {
    spec.commandLine().getOut().print(AutoComplete.bash(spec.root().name(), spec.root().commandLine()));
    spec.commandLine().getOut().flush();
    return 0;
  }
}
