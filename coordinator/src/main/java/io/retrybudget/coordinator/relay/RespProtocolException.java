package io.retrybudget.coordinator.relay;

/**
 * A request that is not RESP as the relay accepts it (a wrong type byte, a length out of bounds, a
 * malformed number or line end). The host answers it with one error reply and closes the
 * connection: after garbage, nothing that follows on the connection can be framed reliably.
 */
public final class RespProtocolException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public RespProtocolException(String message) {
    super("Protocol error: " + message);
  }
}
