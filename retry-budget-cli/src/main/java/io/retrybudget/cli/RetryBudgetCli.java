package io.retrybudget.cli;

import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ScopeType;
import picocli.CommandLine.Spec;

/**
 * {@code retry-budget}, the operator CLI: list, get, set, delete and watch budgets through the
 * coordinator's HTTP API. Exit codes: 0 done, 1 refused or not found (the coordinator answered 4xx
 * or 5xx, did not answer in time, or could not be reached), 2 wrong usage.
 */
@Command(name = "retry-budget", mixinStandardHelpOptions = true, scope = ScopeType.INHERIT, versionProvider = RetryBudgetCli.Version.class,
    description = "Operate fleet-wide retry budgets through the Retry Budget coordinator's HTTP API.",
    subcommands = {ListCommand.class, GetCommand.class, SetCommand.class, DeleteCommand.class, WatchCommand.class,
        CompletionCommand.class},
    exitCodeListHeading = "%nExit codes:%n",
    exitCodeList = {"0:done", "1:refused or not found: the coordinator answered 4xx/5xx, timed out or is unreachable",
        "2:wrong usage"},
    footer = {"%nEnvironment: RETRY_BUDGET_URL (the default of --url), RETRY_BUDGET_TOKEN (of --token), NO_COLOR."})
public final class RetryBudgetCli implements java.util.concurrent.Callable<Integer> {
  /** The default coordinator when neither --url nor RETRY_BUDGET_URL is given. */
  static final String DEFAULT_URL = "http://localhost:8080";
  /**
   * Responses longer than this are refused. A listing holds at most 100,000 budgets (the most
   * COORDINATOR_MAX_BUDGETS allows), at most about 430 bytes each with 100-character names and
   * 10-digit counts: 43 MB.
   */
  static final long MAX_BODY_BYTES = 64L << 20;

  /** Output formats: a table for people, the coordinator's JSON (one document per line) for scripts. */
  enum Output { table, json }

  @Spec CommandSpec spec;

  @Option(names = "--url", paramLabel = "URL", scope = ScopeType.INHERIT,
      description = "the coordinator's base URL (default: $RETRY_BUDGET_URL, else " + DEFAULT_URL + ")")
  String url;

  @Option(names = "--token", paramLabel = "TOKEN", scope = ScopeType.INHERIT,
      description = "bearer token for set and delete (default: $RETRY_BUDGET_TOKEN; prefer the variable, "
          + "arguments show in ps)")
  String token;

  @Option(names = {"-o", "--output"}, paramLabel = "FORMAT", scope = ScopeType.INHERIT, defaultValue = "table",
      description = "table or json (default: ${DEFAULT-VALUE})")
  Output output;

  @Option(names = "--timeout", paramLabel = "MS", scope = ScopeType.INHERIT, defaultValue = "5000",
      description = "the most one HTTP exchange may take, in ms (default: ${DEFAULT-VALUE})")
  int timeoutMillis;

  private final CliContext context;

  RetryBudgetCli(CliContext context) {
    this.context = context;
  }

  /** Without a command: a usage error that lists the commands. */
  @Override
  public Integer call() {
    throw usage("missing a command: list, get, set, delete, watch or completion");
  }

  CliContext context() {
    return context;
  }

  boolean json() {
    return output == Output.json;
  }

  /** A client for the coordinator the options and environment name; a wrong value is a usage error. */
  CoordinatorClient client() {
    String base = url != null ? url : context.env().getOrDefault("RETRY_BUDGET_URL", DEFAULT_URL);
    URI uri;
    try {
      uri = new URI(base);
    } catch (URISyntaxException e) {
      throw usage("--url: not a URL: " + Text.clean(base));
    }
    if (!("http".equalsIgnoreCase(uri.getScheme()) || "https".equalsIgnoreCase(uri.getScheme())) || uri.getHost() == null
        || uri.getRawQuery() != null || uri.getRawFragment() != null) {
      throw usage("--url: expected http://host[:port][/path] or https://..., was " + Text.clean(base));
    }
    if (timeoutMillis < 1 || timeoutMillis > 600_000) {
      throw usage("--timeout: expected 1 to 600000 ms, was " + timeoutMillis);
    }
    String bearer = token != null ? token : context.env().get("RETRY_BUDGET_TOKEN");
    if (bearer != null && bearer.isEmpty()) {
      bearer = null;
    }
    if (bearer != null && !bearer.chars().allMatch(c -> c > 0x20 && c < 0x7f)) {
      throw usage("--token: a bearer token is visible ASCII without spaces");
    }
    return new CoordinatorClient(uri, bearer, Duration.ofMillis(timeoutMillis), MAX_BODY_BYTES);
  }

  CommandLine.ParameterException usage(String message) {
    return new CommandLine.ParameterException(spec.commandLine(), message);
  }

  /** The command line, with its exit codes and error output, for the given context. */
  static CommandLine commandLine(CliContext context) {
    CommandLine cli = new CommandLine(new RetryBudgetCli(context));
    cli.setCaseInsensitiveEnumValuesAllowed(true);
    cli.setParameterExceptionHandler((e, args) -> {
      PrintWriter err = e.getCommandLine().getErr();
      err.println("retry-budget: " + Text.clean(e.getMessage()));
      CommandLine.UnmatchedArgumentException.printSuggestions(e, err);
      err.println("Try '" + e.getCommandLine().getCommandSpec().qualifiedName() + " --help' for more.");
      return CommandLine.ExitCode.USAGE;
    });
    cli.setExecutionExceptionHandler((e, command, parsed) -> {
      if (e instanceof CliFailure) {
        command.getErr().println("retry-budget: " + e.getMessage());
        return CommandLine.ExitCode.SOFTWARE;
      }
      throw e;
    });
    return cli;
  }

  /** Runs the CLI in a real process and exits with its exit code. */
  public static void main(String[] args) {
    CommandLine cli = commandLine(CliContext.system());
    cli.setOut(new PrintWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8), true));
    cli.setErr(new PrintWriter(new OutputStreamWriter(System.err, StandardCharsets.UTF_8), true));
    System.exit(cli.execute(args));
  }

  /** The version from the jar's manifest (the Maven project version). */
  static final class Version implements CommandLine.IVersionProvider {
    @Override
    public String[] getVersion() {
      String v = RetryBudgetCli.class.getPackage().getImplementationVersion();
      return new String[] {"retry-budget " + (v == null ? "(development build)" : v)};
    }
  }
}
