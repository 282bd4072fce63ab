package io.retrybudget.coordinator.relay;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Consumer;

/**
 * An incremental, bounded parser of RESP requests (RESP2 and RESP3 send requests alike: an array of
 * bulk strings, {@code *N\r\n$len\r\nbytes\r\n...}). Bytes come in as they arrive, in chunks of any
 * size; each complete command goes to the sink as its arguments. Pure (no I/O), not thread-safe: one
 * per connection, fed on its event loop.
 *
 * <p>Bounded whatever a client sends: at most {@code maxArgs} arguments, each at most
 * {@code maxBulkBytes}, together at most {@code maxCommandBytes}; header lines at most 32 bytes. A
 * command's bytes are allocated as they arrive, not as declared ({@link #heldBytes}), so a client that
 * declares the largest length and sends nothing costs 1 KiB. Anything else (inline commands, nested
 * arrays, negative or non-decimal lengths, a missing {@code \r\n}) throws {@link RespProtocolException},
 * and the parser refuses every later chunk: the host answers the error and closes the connection.
 */
public final class RespParser {
  private static final int MAX_LINE = 32;
  /** A bulk string's buffer starts at most this large and doubles as its bytes arrive. */
  private static final int FIRST_BULK_BUFFER = 1024;

  private enum State { ARRAY_HEADER, BULK_HEADER, BULK_BODY, BULK_END }

  private final int maxArgs;
  private final int maxBulkBytes;
  private final int maxCommandBytes;
  private final byte[] line = new byte[MAX_LINE];
  private int lineLength;
  private boolean sawCr;
  private State state = State.ARRAY_HEADER;
  private int argsLeft;
  private List<byte[]> args;
  private int commandBytes;
  private byte[] bulk;
  private int bulkLength;
  private int bulkFilled;
  private int heldBytes; // of the arguments complete so far
  private int endSeen;
  private boolean failed;

  public RespParser(int maxArgs, int maxBulkBytes, int maxCommandBytes) {
    if (maxArgs < 1) {
      throw new IllegalArgumentException("maxArgs must be at least 1, was " + maxArgs);
    }
    if (maxBulkBytes < 1) {
      throw new IllegalArgumentException("maxBulkBytes must be at least 1, was " + maxBulkBytes);
    }
    if (maxCommandBytes < maxBulkBytes) {
      throw new IllegalArgumentException("maxCommandBytes must be at least maxBulkBytes (" + maxBulkBytes
          + "), was " + maxCommandBytes);
    }
    this.maxArgs = maxArgs;
    this.maxBulkBytes = maxBulkBytes;
    this.maxCommandBytes = maxCommandBytes;
  }

  /** Parses {@code len} bytes of {@code data} from {@code off}; each complete command goes to {@code sink}. */
  public void feed(byte[] data, int off, int len, Consumer<List<byte[]>> sink) {
    if (failed) {
      throw new RespProtocolException("connection already failed");
    }
    try {
      int i = off;
      int end = off + len;
      while (i < end) {
        switch (state) {
          case ARRAY_HEADER, BULK_HEADER -> i = header(data, i, end, sink);
          case BULK_BODY -> {
            int n = Math.min(end - i, bulkLength - bulkFilled);
            if (bulkFilled + n > bulk.length) {
              bulk = Arrays.copyOf(bulk, Math.min(bulkLength, Math.max(2 * bulk.length, bulkFilled + n)));
            }
            System.arraycopy(data, i, bulk, bulkFilled, n);
            bulkFilled += n;
            i += n;
            if (bulkFilled == bulkLength) {
              state = State.BULK_END;
              endSeen = 0;
            }
          }
          case BULK_END -> {
            byte b = data[i++];
            if (b != (endSeen == 0 ? '\r' : '\n')) {
              throw new RespProtocolException("bulk string not followed by CRLF");
            }
            if (++endSeen == 2) {
              args.add(bulk);
              heldBytes += bulk.length;
              bulk = null;
              argDone(sink);
            }
          }
          default -> throw new IllegalStateException(state.name());
        }
      }
    } catch (RespProtocolException e) {
      failed = true;
      throw e;
    }
  }

  /** Reads header line bytes from {@code i}; returns where it stopped (after the line, or at {@code end}). */
  private int header(byte[] data, int i, int end, Consumer<List<byte[]>> sink) {
    while (i < end) {
      byte b = data[i++];
      if (sawCr) {
        if (b != '\n') {
          throw new RespProtocolException("CR not followed by LF");
        }
        sawCr = false;
        lineDone(sink);
        return i;
      }
      if (b == '\r') {
        sawCr = true;
      } else if (b == '\n') {
        throw new RespProtocolException("LF without CR");
      } else {
        if (lineLength == 0) {
          char expected = state == State.ARRAY_HEADER ? '*' : '$';
          if (b != expected) {
            throw new RespProtocolException("expected '" + expected + "', got " + describe(b));
          }
        }
        if (lineLength == MAX_LINE) {
          throw new RespProtocolException("header line longer than " + MAX_LINE + " bytes");
        }
        line[lineLength++] = b;
      }
    }
    return i;
  }

  private void lineDone(Consumer<List<byte[]>> sink) {
    long n = number();
    lineLength = 0;
    if (state == State.ARRAY_HEADER) {
      if (n < 1 || n > maxArgs) {
        throw new RespProtocolException("invalid multibulk length " + n + " (1 to " + maxArgs + ")");
      }
      argsLeft = (int) n;
      args = new ArrayList<>(argsLeft);
      commandBytes = 0;
      heldBytes = 0;
      state = State.BULK_HEADER;
      return;
    }
    if (n < 0 || n > maxBulkBytes) {
      throw new RespProtocolException("invalid bulk length " + n + " (0 to " + maxBulkBytes + ")");
    }
    if (commandBytes + n > maxCommandBytes) {
      throw new RespProtocolException("command longer than " + maxCommandBytes + " bytes");
    }
    commandBytes += (int) n;
    bulkLength = (int) n;
    bulk = new byte[Math.min(bulkLength, FIRST_BULK_BUFFER)];
    bulkFilled = 0;
    state = n == 0 ? State.BULK_END : State.BULK_BODY;
    endSeen = 0;
  }

  private void argDone(Consumer<List<byte[]>> sink) {
    if (--argsLeft > 0) {
      state = State.BULK_HEADER;
      return;
    }
    List<byte[]> command = args;
    args = null;
    heldBytes = 0;
    state = State.ARRAY_HEADER;
    sink.accept(command);
  }

  /** The header line's number (after its type byte): an optional '-' and 1 to 18 decimal digits. */
  private long number() {
    int start = 1;
    boolean negative = lineLength > 1 && line[1] == '-';
    if (negative) {
      start = 2;
    }
    int digits = lineLength - start;
    if (digits < 1 || digits > 18) {
      throw new RespProtocolException("invalid length: " + digits + " digits");
    }
    long n = 0;
    for (int k = start; k < lineLength; k++) {
      byte d = line[k];
      if (d < '0' || d > '9') {
        throw new RespProtocolException("invalid length: " + describe(d) + " is not a digit");
      }
      n = n * 10 + (d - '0');
    }
    return negative ? -n : n;
  }

  private static String describe(byte b) {
    return b >= 0x21 && b <= 0x7e ? "'" + (char) b + "'" : String.format("byte 0x%02x", b & 0xff);
  }

  /**
   * The bytes held for the command begun and not complete: its complete arguments and the buffer of
   * the one arriving, which grows with what arrived (never to more than twice that, or 1 KiB), not
   * with what was declared.
   */
  public int heldBytes() {
    return heldBytes + (bulk == null ? 0 : bulk.length);
  }

  /** True while a command has begun and is not complete (bytes of it are held). */
  public boolean partial() {
    return state != State.ARRAY_HEADER || lineLength > 0 || sawCr;
  }
}
