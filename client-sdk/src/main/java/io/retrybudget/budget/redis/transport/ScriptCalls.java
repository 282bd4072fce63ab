package io.retrybudget.budget.redis.transport;

import io.lettuce.core.RedisNoScriptException;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.async.RedisScriptingAsyncCommands;
import io.retrybudget.budget.redis.protocol.LuaScript;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/** Running a script of lua/ by SHA, and loading them all into a node's cache. */
final class ScriptCalls {
  private ScriptCalls() {}

  /**
   * EVALSHA; on NOSCRIPT the script's text once with EVAL (which caches it again). Never throws: a
   * closed connection or client fails the future.
   */
  static <T> CompletableFuture<T> bySha(RedisScriptingAsyncCommands<String, String> on, LuaScript script,
      ScriptOutputType type, String[] keyNames, String... args) {
    CompletableFuture<T> result = new CompletableFuture<>();
    try {
      on.<T>evalsha(script.sha1(), type, keyNames, args).whenComplete((reply, error) -> {
        if (error == null) {
          result.complete(reply);
        } else if (unwrap(error) instanceof RedisNoScriptException) {
          try {
            on.<T>eval(script.body(), type, keyNames, args).whenComplete((again, error2) -> {
              if (error2 == null) {
                result.complete(again);
              } else {
                result.completeExceptionally(unwrap(error2));
              }
            });
          } catch (RuntimeException e) {
            result.completeExceptionally(e);
          }
        } else {
          result.completeExceptionally(unwrap(error));
        }
      });
    } catch (RuntimeException e) {
      result.completeExceptionally(e);
    }
    return result;
  }

  /** SCRIPT LOAD of every budget script on one node. */
  static CompletableFuture<Void> loadAll(RedisScriptingAsyncCommands<String, String> commands) {
    List<CompletableFuture<String>> loads = new ArrayList<>();
    for (LuaScript script : LuaScript.BUDGET_SCRIPTS) {
      loads.add(commands.scriptLoad(script.body()).toCompletableFuture());
    }
    return CompletableFuture.allOf(loads.toArray(new CompletableFuture<?>[0]));
  }

  static Throwable unwrap(Throwable error) {
    return error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
  }
}
