package io.retrybudget.coordinator.relay;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.lettuce.core.RedisCommandTimeoutException;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.DefaultClientResources;
import io.lettuce.core.resource.Transports;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.redis.protocol.BudgetCall;
import io.retrybudget.budget.redis.protocol.BudgetKeys;
import io.retrybudget.budget.redis.protocol.BudgetScripts;
import io.retrybudget.budget.redis.protocol.ClientSequence;
import io.retrybudget.budget.redis.protocol.CountsInDoubt;
import io.retrybudget.budget.redis.protocol.NumberedCall;
import io.retrybudget.budget.redis.transport.RedisBudgetStore;
import io.retrybudget.budget.redis.transport.RedisConnectionOptions;
import io.retrybudget.testing.Eventually;
import io.retrybudget.testing.RedisExtension;
import io.vertx.core.Vertx;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A budget's first call to a real relay times out unwritten (its connection's event loop held, the way a
 * client JVM far behind holds it) while the next call, carrying its counts, goes ahead and arrives first:
 * the relay has no entry to judge them by, and the client, told so ({@code NumberedCall.judged()}),
 * carries them again with the call after, which the relay adds once, because the client told the floor
 * of its connection ({@code ConnectionFloor}). The same schedule on a store that cannot count its
 * connections (on the caller's Lettuce resources) loses them: the relay cannot tell them from a call
 * sent on an earlier connection. Lettuce's command timeout is 3 s: the held call fails after it, and the
 * calls sent after it have the same 3 s for one round trip to a relay in this JVM on loopback, which
 * takes milliseconds even at a load average of 16.
 */
class RelayFloorTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();

  private static final Duration TIMEOUT = Duration.ofSeconds(3);

  @Test
  void aFirstCallThatTimedOutUnwrittenIsCountedOnceThroughTheClientsFloor() throws Exception {
    EventLoopGroup loop = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
    try {
      assertEquals(11, run("floor", options -> RedisBudgetStore.connect(options.build(), loop), loop, 11),
          "8 + 1 + 1 + 1: the first call's 8 added once");
    } finally {
      loop.shutdownGracefully(0, 2, TimeUnit.SECONDS).await(10, TimeUnit.SECONDS);
    }
  }

  @Test
  void withoutTheFloorTheSameScheduleLosesThem() throws Exception {
    ClientResources resources = DefaultClientResources.builder().ioThreadPoolSize(1).computationThreadPoolSize(1).build();
    EventLoopGroup loop = resources.eventLoopGroupProvider().allocate(Transports.eventLoopGroupClass());
    try {
      assertEquals(3, run("no-floor",
          options -> RedisBudgetStore.connect(options.clientResources(resources).build()), loop, 3), "the first call's 8 are lost");
    } finally {
      resources.eventLoopGroupProvider().release(loop, 0, 2, TimeUnit.SECONDS); // the test's own reference
      resources.shutdown(0, 2, TimeUnit.SECONDS).get(10, TimeUnit.SECONDS);
    }
  }

  /**
   * The schedule on budget {@code name}, the client's store made by {@code connect} with its I/O on
   * {@code loop}: Redis's count of first attempts once it holds at least {@code least}.
   */
  private static long run(String name, Function<RedisConnectionOptions.Builder, RedisBudgetStore> connect, EventLoopGroup loop,
      long least) throws Exception {
    Vertx vertx = Vertx.vertx();
    RedisBudgetStore upstream = RedisBudgetStore.connect(redis.connectionOptions().build());
    BudgetScripts redisScripts = new BudgetScripts(upstream);
    RelayHost relay = RelayHost.start(vertx, redisScripts, RelayHostOptions.builder().build())
        .toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    RedisBudgetStore store = connect.apply(RedisConnectionOptions.standalone("redis://127.0.0.1:" + relay.port())
        .commandTimeout(TIMEOUT));
    try {
      boolean counts = store.connectionsOpened() > 0;
      BudgetScripts scripts = new BudgetScripts(store);
      BudgetConfig config = BudgetConfig.builder(name).build();
      BudgetKeys keys = scripts.keys(name);
      ClientSequence sequence = new ClientSequence("client-" + name);
      CountDownLatch release = new CountDownLatch(1);
      for (io.netty.util.concurrent.EventExecutor executor : loop) {
        executor.submit(() -> {
          release.await(); // the connection's event loop is held: nothing is written
          return null;
        });
      }
      BudgetCall first = new BudgetCall(name, 8, 0, 0, 0, 0, config);
      NumberedCall one = scripts.numbered(first, keys, sequence);
      ExecutionException failed = assertThrows(ExecutionException.class, () -> one.reply().get(30, TimeUnit.SECONDS));
      assertInstanceOf(RedisCommandTimeoutException.class, failed.getCause(), "call 1 timed out, held unwritten");
      List<CountsInDoubt> carried = List.of(CountsInDoubt.of(one.number(), first));
      NumberedCall two = scripts.numbered(new BudgetCall(name, 1, 0, 0, 0, 0, config), keys, sequence, carried);
      release.countDown(); // call 1 is skipped (done before it was written); 2 goes out, the relay's first
      assertTrue(two.reply().get(10, TimeUnit.SECONDS).applied());
      assertEquals(!counts, two.judged(), "the relay's first report of this client: what it carried was not judged");
      NumberedCall three = scripts.numbered(new BudgetCall(name, 1, 0, 0, 0, 0, config), keys, sequence, carried);
      assertTrue(three.reply().get(10, TimeUnit.SECONDS).applied());
      assertTrue(three.judged(), "after 2 was answered on this connection");
      // call 4 carries it again, as a client whose reply to 3 was lost would: never added twice
      NumberedCall four = scripts.numbered(new BudgetCall(name, 1, 0, 0, 0, 0, config), keys, sequence, carried);
      assertTrue(four.reply().get(10, TimeUnit.SECONDS).applied());
      Eventually.await("the relay's report in Redis", Duration.ofSeconds(10),
          () -> redisScripts.status(name, config).orTimeout(5, TimeUnit.SECONDS).join().requests() >= least);
      return redisScripts.status(name, config).orTimeout(5, TimeUnit.SECONDS).join().requests();
    } finally {
      store.close();
      relay.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
      upstream.close();
      vertx.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    }
  }
}
