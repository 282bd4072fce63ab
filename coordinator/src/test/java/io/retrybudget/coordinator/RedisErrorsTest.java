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

  @Test
  void anOutOfMemoryMetInsideAScriptIsNamedOnEveryRedisVersion() {
    String oom = "Redis at h:1 is out of memory (OOM: maxmemory reached, writes refused)";
    // Redis 7 passes the script's command's error on as it is
    assertEquals(oom, RedisErrors.describe(new RedisCommandExecutionException(
        "OOM command not allowed when used memory > 'maxmemory'. script: abc, on @user_script:12."), "h:1", 1000));
    // Redis 6.2 wraps it (RedisOutageTest.aRedisOutOfMemoryIsNamedInThe503 on the embedded 6.2 binary
    // read "refused the command (ERR)" before)
    assertEquals(oom, RedisErrors.describe(new RedisCommandExecutionException(
        "ERR Error running script (call to f_1f2e): @user_script:12: @user_script: 12: -OOM command not allowed "
            + "when used memory > 'maxmemory'. "), "h:1", 1000));
    // a script's own error without a code stays the script's
    assertEquals("Redis at h:1 refused the command (ERR)", RedisErrors.describe(new RedisCommandExecutionException(
        "ERR Error running script (call to f_1f2e): @user_script:3: user_script:3: attempt to compare nil"), "h:1", 1000));
  }
}
