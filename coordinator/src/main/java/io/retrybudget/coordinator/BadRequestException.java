package io.retrybudget.coordinator;

/** Client input that is wrong; becomes a 400 (or the status given, e.g. 415) naming the field. */
final class BadRequestException extends RuntimeException {
  private final String field;
  private final int status;

  BadRequestException(String field, String message) {
    this(400, field, message);
  }

  BadRequestException(int status, String field, String message) {
    super(message, null, false, false);
    this.field = field;
    this.status = status;
  }

  int status() {
    return status;
  }

  String field() {
    return field;
  }
}
