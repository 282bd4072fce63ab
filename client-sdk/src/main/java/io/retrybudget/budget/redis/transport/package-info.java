/**
 * The one Redis connection of a process (standalone, Sentinel or Cluster), shared by every budget,
 * and how it behaves when Redis is slow or gone.
 *
 * <p><b>API:</b> {@link io.retrybudget.budget.redis.transport.RedisConnectionOptions} (where Redis is,
 * timeouts, queue bound, reconnect delay: every application builds one) and {@link
 * io.retrybudget.budget.redis.transport.RedisBudgetStore#connect} / {@code close()} (a server-kit
 * application opens the store itself). <b>Internal, not a stable API:</b> every other member of
 * {@code RedisBudgetStore} (script calls, scans, listings, used by the product's own modules) and
 * the package-private classes that split the work between standalone Redis and Redis Cluster, watch a
 * Cluster failover and share an event loop with Lettuce.
 */
package io.retrybudget.budget.redis.transport;
