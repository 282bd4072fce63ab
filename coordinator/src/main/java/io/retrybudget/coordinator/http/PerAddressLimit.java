package io.retrybudget.coordinator.http;

import io.netty.channel.Channel;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.concurrent.ConcurrentHashMap;

/**
 * At most {@link HttpLimits#maxConnectionsPerIp()} open connections from one client address (when
 * set). An address is held here while it has an open connection, so there are at most as many
 * entries as connections.
 */
final class PerAddressLimit {
  private final int limit;
  private final ConcurrentHashMap<InetAddress, Integer> perAddress = new ConcurrentHashMap<>();

  PerAddressLimit(int limit) {
    this.limit = limit;
  }

  /** The client address of {@code child} when the limit is set, else null (nothing to count). */
  InetAddress addressToCount(Channel child) {
    return limit > 0 && child.remoteAddress() instanceof InetSocketAddress a ? a.getAddress() : null;
  }

  /** Counts a connection from {@code address}; false (and nothing counted) when it has its limit already. */
  boolean admit(InetAddress address) {
    boolean[] admitted = {false};
    perAddress.compute(address, (a, n) -> {
      int held = n == null ? 0 : n;
      admitted[0] = held < limit;
      return admitted[0] ? held + 1 : n;
    });
    return admitted[0];
  }

  void release(InetAddress address) {
    perAddress.computeIfPresent(address, (a, n) -> n <= 1 ? null : n - 1);
  }

  /** Client addresses with an open connection. */
  int held() {
    return perAddress.size();
  }
}
