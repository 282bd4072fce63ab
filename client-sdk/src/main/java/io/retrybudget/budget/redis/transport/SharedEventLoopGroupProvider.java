package io.retrybudget.budget.redis.transport;

import io.lettuce.core.resource.EventLoopGroupProvider;
import io.lettuce.core.resource.Transports;
import io.netty.channel.EventLoopGroup;
import io.netty.util.concurrent.EventExecutorGroup;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.ImmediateEventExecutor;
import java.util.concurrent.TimeUnit;

/**
 * Hands Lettuce an event loop group that someone else owns (a Vert.x event loop), so its channels
 * live on that thread: a command written from it goes out without a thread hop and its reply is
 * read there. Lettuce never shuts the group down; its owner does. A group of another type than the
 * one Lettuce asks for (its transport's) is refused with an {@link IllegalArgumentException}.
 */
final class SharedEventLoopGroupProvider implements EventLoopGroupProvider {
  private final EventLoopGroup group;
  private final int threads;

  SharedEventLoopGroupProvider(EventLoopGroup group) {
    this.group = group;
    // fail at once, at connect, rather than on the first channel Lettuce cannot register
    requireServes(Transports.eventLoopGroupClass());
    int n = 0;
    for (var ignored : group) {
      n++;
    }
    this.threads = Math.max(1, n);
  }

  private void requireServes(Class<?> type) {
    if (!type.isInstance(group)) {
      throw new IllegalArgumentException("Lettuce needs an event loop group of type " + type.getName()
          + " for its " + Transports.socketChannelClass().getSimpleName() + " channels; the shared group is a "
          + group.getClass().getName() + " and cannot serve it");
    }
  }

  @Override
  @SuppressWarnings("unchecked")
  public <T extends EventLoopGroup> T allocate(Class<T> type) {
    requireServes(type);
    return (T) group;
  }

  @Override
  public int threadPoolSize() {
    return threads;
  }

  @Override
  public Future<Boolean> release(EventExecutorGroup eventLoopGroup, long quietPeriod, long timeout, TimeUnit unit) {
    return ImmediateEventExecutor.INSTANCE.newSucceededFuture(true);
  }

  @Override
  public Future<Boolean> shutdown(long quietPeriod, long timeout, TimeUnit unit) {
    return ImmediateEventExecutor.INSTANCE.newSucceededFuture(true);
  }
}
