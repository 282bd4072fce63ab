package io.retrybudget.budget.redis.transport;

import io.retrybudget.budget.redis.protocol.BudgetKeys;
import io.retrybudget.budget.redis.protocol.LuaScript;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.retrybudget.testing.RedisExtension;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** A store whose I/O runs on an event loop the caller owns (as the coordinator's Vert.x loop). */
class SharedEventLoopStoreTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();

  @Test
  void repliesArriveOnTheCallersLoopAndCloseLeavesItRunning() throws Exception {
    EventLoopGroup loop = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
    try {
      BudgetKeys k = new BudgetKeys("shared-loop");
      CompletableFuture<Boolean> onLoop = new CompletableFuture<>();
      try (RedisBudgetStore store = RedisBudgetStore.connect(redis.connectionOptions().build(), loop)) {
        // written from the loop itself, as a request handler would: no hop, and the reply comes back there
        loop.execute(() -> store.run(LuaScript.BUDGET, new String[] {k.config(), k.window(), k.clients(), k.index(), k.pace()},
                "", "1", "5", "0", "0", "0", "100000", "10", "10", "enforce")
            .whenComplete((reply, error) -> {
              if (error != null) {
                onLoop.completeExceptionally(error);
              } else {
                onLoop.complete(loop.next().inEventLoop());
              }
            }));
        assertTrue(onLoop.get(5, TimeUnit.SECONDS), "reply completed on the caller's event loop");
        List<Object> status = store.run(LuaScript.STATUS, new String[] {k.config(), k.window()},
            "100000", "10", "10", "enforce").get(5, TimeUnit.SECONDS);
        assertEquals(5L, status.get(1), "requests counted");
      }
      assertFalse(loop.isShuttingDown(), "closing the store must not shut down a loop it does not own");
      assertTrue(loop.submit(() -> true).get(5, TimeUnit.SECONDS), "the loop still runs tasks");
    } finally {
      loop.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
    }
  }

  @Test
  void aGroupOfATypeLettuceCannotUseIsRefusedAtOnceNamingBoth() {
    EventLoopGroup local = new io.netty.channel.DefaultEventLoopGroup(1);
    EventLoopGroup nio = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
    try {
      long start = System.nanoTime();
      IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
          () -> RedisBudgetStore.connect(redis.connectionOptions().build(), local));
      assertTrue(e.getMessage().contains("DefaultEventLoopGroup") && e.getMessage().contains("MultiThreadIoEventLoopGroup"),
          e.getMessage());
      assertTrue(System.nanoTime() - start < java.util.concurrent.TimeUnit.SECONDS.toNanos(2), "at once");
      SharedEventLoopGroupProvider provider = new SharedEventLoopGroupProvider(nio);
      assertTrue(provider.allocate(MultiThreadIoEventLoopGroup.class) == nio);
      org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
          () -> provider.allocate(io.netty.channel.DefaultEventLoopGroup.class));
    } finally {
      local.shutdownGracefully(0, 0, java.util.concurrent.TimeUnit.SECONDS);
      nio.shutdownGracefully(0, 0, java.util.concurrent.TimeUnit.SECONDS);
    }
  }
}
