package io.retrybudget.coordinator;

import io.retrybudget.coordinator.api.RedisErrors;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisException;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.Test;

class RedisErrorsTest {
  @Test
  void aFullLocalQueueIsNamedAsTheCoordinatorsNotAsRedis() {
    for (String lettuce : new String[] {
        "Internal stack size exceeded: 4096. Commands are not accepted until the stack size drops.",
        "Request queue size exceeded: 4096. Commands are not accepted until the queue size drops."}) {
      String text = RedisErrors.describe(new CompletionException(new RedisException(lettuce)), "h:1", 1000);
      assertEquals("the coordinator's queue of commands to Redis at h:1 is full (too many calls in flight in "
          + "this process; not a fault of Redis)", text);
    }
    // a reply of Redis with the same words is Redis's
    assertTrue(RedisErrors.describe(new RedisCommandExecutionException("ERR Internal stack size exceeded"), "h:1", 1000)
        .startsWith("Redis at h:1 refused the command"));
  }
}
