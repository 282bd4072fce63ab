package io.retrybudget.coordinator;

import io.netty.bootstrap.ServerBootstrap;
import io.vertx.core.impl.transports.NioTransport;
import io.vertx.core.net.NetServerOptions;
import io.vertx.core.transport.Transport;

/**
 * Vert.x's NIO transport with the {@link ConnectionGuard} on the listening socket, so every accepted
 * connection passes the guard before Vert.x sets it up (the only place where a connection can be
 * counted, refused or timed out before its first byte).
 */
final class GuardedTransport implements Transport {
  private final Nio implementation;

  GuardedTransport(ConnectionGuard guard) {
    this.implementation = new Nio(guard);
  }

  @Override
  public String name() {
    return "nio";
  }

  @Override
  public boolean available() {
    return true;
  }

  @Override
  public Throwable unavailabilityCause() {
    return null;
  }

  @Override
  public io.vertx.core.spi.transport.Transport implementation() {
    return implementation;
  }

  private static final class Nio extends NioTransport {
    private final ConnectionGuard guard;

    Nio(ConnectionGuard guard) {
      this.guard = guard;
    }

    @Override
    public void configure(NetServerOptions options, boolean domainSocket, ServerBootstrap bootstrap) {
      super.configure(options, domainSocket, bootstrap);
      bootstrap.handler(guard);
    }
  }
}
