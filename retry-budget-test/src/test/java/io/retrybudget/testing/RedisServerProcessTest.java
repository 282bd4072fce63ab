package io.retrybudget.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The harness never hands a test someone else's Redis: builds run side by side on one machine
 * (parallel modules, other checkouts), and a free port picked by one may be bound by another
 * before its redis-server starts.
 */
class RedisServerProcessTest {
  @Test
  void aPortAlreadyServedByAnotherRedisIsRefusedNotShared() {
    try (RedisServerProcess first = RedisServerProcess.start()) {
      first.call("SET", "owner", "first");
      assertThrows(RedisServerProcess.PortTakenException.class,
          () -> RedisServerProcess.start(first.port(), List.of()).close());
      assertEquals("first", first.call("GET", "owner"), "the first server is untouched");
    }
  }
}
