package io.retrybudget.coordinator.http;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFactory;
import io.netty.channel.ChannelHandler;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.ServerChannel;
import io.netty.channel.socket.DatagramChannel;
import io.netty.channel.socket.InternetProtocolFamily;
import io.vertx.core.datagram.DatagramSocketOptions;
import io.vertx.core.net.ClientOptionsBase;
import io.vertx.core.net.NetServerOptions;
import io.vertx.core.net.SocketAddress;
import io.vertx.core.transport.Transport;
import java.util.concurrent.ThreadFactory;

/**
 * Vert.x's NIO transport with a handler on the listening socket ({@link ConnectionGuard}), so every
 * accepted connection passes it before Vert.x sets the connection up (the only place where a
 * connection can be counted, refused or timed out before its first byte). Built on the public
 * transport SPI: every call goes to {@link Transport#NIO}'s implementation, and the server
 * bootstrap gets the handler after it is configured.
 */
public final class GuardedTransport implements Transport {
  private final Nio implementation;

  public GuardedTransport(ChannelHandler acceptor) {
    this.implementation = new Nio(Transport.NIO.implementation(), acceptor);
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

  private static final class Nio implements io.vertx.core.spi.transport.Transport {
    private final io.vertx.core.spi.transport.Transport nio;
    private final ChannelHandler acceptor;

    Nio(io.vertx.core.spi.transport.Transport nio, ChannelHandler acceptor) {
      this.nio = nio;
      this.acceptor = acceptor;
    }

    @Override
    public void configure(NetServerOptions options, boolean domainSocket, ServerBootstrap bootstrap) {
      nio.configure(options, domainSocket, bootstrap);
      bootstrap.handler(acceptor);
    }

    @Override
    public boolean supportsDomainSockets() {
      return nio.supportsDomainSockets();
    }

    @Override
    public boolean supportFileRegion() {
      return nio.supportFileRegion();
    }

    @Override
    public boolean isAvailable() {
      return nio.isAvailable();
    }

    @Override
    public Throwable unavailabilityCause() {
      return nio.unavailabilityCause();
    }

    @Override
    public java.net.SocketAddress convert(SocketAddress address) {
      return nio.convert(address);
    }

    @Override
    public SocketAddress convert(java.net.SocketAddress address) {
      return nio.convert(address);
    }

    @Override
    public IoHandlerFactory ioHandlerFactory() {
      return nio.ioHandlerFactory();
    }

    @Override
    public EventLoopGroup eventLoopGroup(int type, int threads, ThreadFactory factory, int ioRatio) {
      return nio.eventLoopGroup(type, threads, factory, ioRatio);
    }

    @Override
    public DatagramChannel datagramChannel() {
      return nio.datagramChannel();
    }

    @Override
    public DatagramChannel datagramChannel(InternetProtocolFamily family) {
      return nio.datagramChannel(family);
    }

    @Override
    public ChannelFactory<? extends Channel> channelFactory(boolean domainSocket) {
      return nio.channelFactory(domainSocket);
    }

    @Override
    public ChannelFactory<? extends ServerChannel> serverChannelFactory(boolean domainSocket) {
      return nio.serverChannelFactory(domainSocket);
    }

    @Override
    public void configure(DatagramChannel channel, DatagramSocketOptions options) {
      nio.configure(channel, options);
    }

    @Override
    public void configure(ClientOptionsBase options, int connectTimeout, boolean domainSocket, Bootstrap bootstrap) {
      nio.configure(options, connectTimeout, domainSocket, bootstrap);
    }
  }
}
