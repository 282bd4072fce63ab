package io.retrybudget.budget.redis.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.DefaultClientResources;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.retrybudget.budget.redis.protocol.BudgetKeys;
import io.retrybudget.budget.redis.protocol.LuaScript;
import io.retrybudget.testing.RedisExtension;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** A store on Lettuce resources an application owns: it uses them and never shuts them down. */
class SharedClientResourcesStoreTest {
  @RegisterExtension static final RedisExtension redis = RedisExtension.standalone();

  @Test
  void aStoreRunsOnTheCallersResourcesAndClosingItLeavesThemAndTheirClientsWorking() throws Exception {
    ClientResources shared = DefaultClientResources.builder().ioThreadPoolSize(1).computationThreadPoolSize(1).build();
    RedisClient application = RedisClient.create(shared, redis.uri());
    try (StatefulRedisConnection<String, String> appConnection = application.connect()) {
      RedisConnectionOptions options = redis.connectionOptions().clientResources(shared).build();
      assertSame(shared, options.clientResources());
      BudgetKeys k = new BudgetKeys("shared-resources");
      try (RedisBudgetStore store = RedisBudgetStore.connect(options)) {
        store.run(LuaScript.BUDGET, new String[] {k.config(), k.window(), k.clients(), k.index(), k.pace()},
            "", "1", "5", "0", "0", "0", "100000", "10", "10", "enforce").get(5, TimeUnit.SECONDS);
        List<Object> status = store.run(LuaScript.STATUS, new String[] {k.config(), k.window()},
            "100000", "10", "10", "enforce").get(5, TimeUnit.SECONDS);
        assertEquals(5L, status.get(1), "requests counted through the shared resources");
        assertEquals(-1, store.connectionsOpened(), "its channels are counted only on resources it owns");
      }
      assertFalse(shared.eventExecutorGroup().isShuttingDown(), "the store must not shut down resources it does not own");
      assertEquals("PONG", appConnection.sync().ping(), "the application's own connection still works");
      try (StatefulRedisConnection<String, String> again = application.connect()) {
        assertEquals("PONG", again.sync().ping(), "the application's client still opens connections");
      }
    } finally {
      application.shutdown();
      shared.shutdown(0, 1, TimeUnit.SECONDS).get(5, TimeUnit.SECONDS);
    }
  }

  @Test
  void sharedResourcesAndAnEventLoopOfTheCallerCannotBothBeGiven() {
    ClientResources shared = DefaultClientResources.builder().ioThreadPoolSize(1).computationThreadPoolSize(1).build();
    EventLoopGroup loop = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
    try {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> RedisBudgetStore.connect(redis.connectionOptions().clientResources(shared).build(), loop));
      assertTrue(e.getMessage().contains("client resources"), e.getMessage());
    } finally {
      loop.shutdownGracefully(0, 0, TimeUnit.SECONDS);
      shared.shutdown(0, 0, TimeUnit.SECONDS);
    }
  }

  @Test
  void urisMadeByTheCallerAreCopiedAndChecked() {
    RedisURI sentinel = RedisURI.builder().withSentinelMasterId("mymaster").withSentinel("s1", 26379, "sentinel-secret")
        .withAuthentication("app", "secret".toCharArray()).withDatabase(2).build();
    RedisConnectionOptions options = RedisConnectionOptions.standalone(sentinel).build();
    assertTrue(options.isSentinel());
    RedisURI copy = options.uris().get(0);
    assertEquals("mymaster", copy.getSentinelMasterId());
    assertEquals(2, copy.getDatabase());
    assertEquals("s1", copy.getSentinels().get(0).getHost());
    sentinel.setDatabase(5);
    assertEquals(2, options.uris().get(0).getDatabase(), "a copy is kept");

    RedisConnectionOptions cluster = RedisConnectionOptions.clusterSeeds(List.of(RedisURI.create("h1", 7000),
        RedisURI.create("h2", 7001))).build();
    assertTrue(cluster.isCluster());
    assertEquals(7001, cluster.uris().get(1).getPort());

    RedisURI noHost = new RedisURI();
    assertThrows(IllegalArgumentException.class, () -> RedisConnectionOptions.standalone(noHost));
    assertThrows(IllegalArgumentException.class, () -> RedisConnectionOptions.clusterSeeds(List.of()));
    assertThrows(IllegalArgumentException.class, () -> RedisConnectionOptions.clusterSeeds(List.of(sentinel)));
    RedisURI noMaster = RedisURI.builder().withSentinel("s1", 26379).build();
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> RedisConnectionOptions.standalone(noMaster));
    assertTrue(e.getMessage().contains("master"), e.getMessage());
  }
}
