package io.retrybudget.coordinator.api;

import io.retrybudget.coordinator.CoordinatorConfig;
import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisCommandTimeoutException;
import io.lettuce.core.RedisConnectionException;
import io.lettuce.core.RedisException;
import java.net.ConnectException;
import java.nio.channels.ClosedChannelException;
import java.util.concurrent.TimeoutException;

/**
 * What an operator should read when a Redis call fails: the cause in words (connection refused by
 * host:port, timeout, out of memory, ...), built from the configured endpoint and the error's type,
 * never from a URL (so never a password). Pure.
 */
public final class RedisErrors {
  private RedisErrors() {}

  /**
   * @param endpoint where Redis is, without credentials ({@link CoordinatorConfig#redisEndpoint()})
   * @param timeoutMillis the command timeout
   */
  public static String describe(Throwable failure, String endpoint, long timeoutMillis) {
    for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (isLocalQueueFull(t)) {
        // Lettuce refused the command before sending it: this process's queue, not Redis
        return "the coordinator's queue of commands to Redis at " + endpoint
            + " is full (too many calls in flight in this process; not a fault of Redis)";
      }
    }
    for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (t instanceof RedisCommandTimeoutException || t instanceof TimeoutException) {
        return "Redis at " + endpoint + " did not answer within " + timeoutMillis + " ms";
      }
      if (t instanceof ConnectException || contains(t, "Connection refused")) {
        return "connection refused by Redis at " + endpoint;
      }
      if (t instanceof RedisCommandExecutionException) {
        String code = errorCode(t.getMessage());
        if (code.equals("ERR")) {
          code = scriptErrorCode(t.getMessage(), code);
        }
        if (code.equals("OOM")) {
          return "Redis at " + endpoint + " is out of memory (OOM: maxmemory reached, writes refused)";
        }
        return "Redis at " + endpoint + " refused the command" + (code.isEmpty() ? "" : " (" + code + ")");
      }
    }
    for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (t instanceof RedisConnectionException || t instanceof ClosedChannelException
          || contains(t, "not connected") || contains(t, "Connection closed")) {
        return "not connected to Redis at " + endpoint + " (reconnecting)";
      }
    }
    return "Redis call to " + endpoint + " failed (" + failure.getClass().getSimpleName() + ")";
  }

  /** Lettuce's refusal of a command its own queue has no room for (requestQueueSize). */
  static boolean isLocalQueueFull(Throwable t) {
    return t instanceof RedisException && !(t instanceof RedisCommandExecutionException)
        && (contains(t, "Request queue size exceeded") || contains(t, "Internal stack size exceeded"));
  }

  /** The leading upper-case word of a Redis error reply ("OOM", "LOADING", "READONLY"), else "". */
  static String errorCode(String message) {
    if (message == null) {
      return "";
    }
    int end = 0;
    while (end < message.length() && end < 20 && Character.isUpperCase(message.charAt(end))) {
      end++;
    }
    return end > 1 && (end == message.length() || message.charAt(end) == ' ') ? message.substring(0, end) : "";
  }

  private static final java.util.regex.Pattern SCRIPT_ERROR =
      java.util.regex.Pattern.compile("^ERR Error running script.*?: -([A-Z]{2,20}) ");

  /**
   * The code of the error a script's own command met, which Redis before 7 wraps in its "ERR Error
   * running script" ("ERR Error running script (call to f_...): @user_script:12: @user_script: 12:
   * -OOM command not allowed when used memory > 'maxmemory'."; Redis 7 passes "OOM ..." on as it is);
   * {@code otherwise} when there is none.
   */
  static String scriptErrorCode(String message, String otherwise) {
    java.util.regex.Matcher m = SCRIPT_ERROR.matcher(message == null ? "" : message);
    return m.find() ? m.group(1) : otherwise;
  }

  private static boolean contains(Throwable t, String text) {
    return t.getMessage() != null && t.getMessage().contains(text);
  }
}
