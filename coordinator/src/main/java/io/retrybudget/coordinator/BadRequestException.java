package io.retrybudget.coordinator;

/** Client input that is wrong; becomes a 400 naming the field. */
final class BadRequestException extends RuntimeException {
  private final String field;

  BadRequestException(String field, String message) {
    super(message, null, false, false);
    this.field = field;
  }

  String field() {
    return field;
  }
}
