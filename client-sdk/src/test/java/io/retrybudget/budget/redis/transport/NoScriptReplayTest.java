package io.retrybudget.budget.redis.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.output.ArrayOutput;
import io.lettuce.core.output.ValueOutput;
import io.lettuce.core.protocol.AsyncCommand;
import io.lettuce.core.protocol.Command;
import io.lettuce.core.protocol.CommandType;
import io.retrybudget.budget.redis.protocol.BudgetScripts;
import java.util.List;
import java.util.concurrent.ExecutionException;
import org.junit.jupiter.api.Test;

/**
 * A script Lettuce would buffer while its connection is down (sent as the connection dropped, past
 * its check that it was up) is refused at once as never sent, not left to wait out its timeout; other
 * commands are left to Lettuce.
 */
class NoScriptReplayTest {
  @Test
  void aScriptThatWouldBeBufferedIsRefusedAsNeverSent() {
    for (CommandType type : new CommandType[] {CommandType.EVALSHA, CommandType.EVAL}) {
      AsyncCommand<String, String, List<Object>> script =
          new AsyncCommand<>(new Command<>(type, new ArrayOutput<>(StringCodec.UTF8)));
      assertTrue(StoreConnection.NO_SCRIPT_REPLAY.test(script), type + " is never replayed");
      assertTrue(script.isDone(), "refused at once, not left to its timeout");
      ExecutionException e = assertThrows(ExecutionException.class, script::get);
      assertEquals("Currently not connected. Commands are rejected.", e.getCause().getMessage());
      assertTrue(BudgetScripts.neverRun(e.getCause()), "its counts go with the next call: it never left");
    }
    AsyncCommand<String, String, String> get = new AsyncCommand<>(new Command<>(CommandType.GET,
        new ValueOutput<>(StringCodec.UTF8)));
    assertFalse(StoreConnection.NO_SCRIPT_REPLAY.test(get));
    assertFalse(get.isDone(), "another command is Lettuce's to buffer");
  }
}
