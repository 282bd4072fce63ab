package io.retrybudget.coordinator.api;

/** Client input that is wrong; becomes a 400 (or the status given, e.g. 415) naming the field. */
public final class BadRequestException extends RuntimeException {
  private final String field;
  private final int status;

  public BadRequestException(String field, String message) {
    this(400, field, message);
  }

  public BadRequestException(int status, String field, String message) {
    super(message, null, false, false);
    this.field = field;
    this.status = status;
  }

  int status() {
    return status;
  }

  public String field() {
    return field;
  }
}
