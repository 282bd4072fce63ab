package io.retrybudget.cli;

/**
 * A command that could not do what was asked: the coordinator refused (4xx/5xx), did not answer in
 * time, or could not be reached. Ends the CLI with exit code 1 and this message on stderr.
 */
final class CliFailure extends RuntimeException {
  CliFailure(String message) {
    super(message);
  }
}
