package io.retrybudget.coordinator.http;

import io.netty.channel.Channel;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * The start-up self-test of {@link VertxInternals}: a throwaway Vert.x, on the same transport as the
 * coordinator's listeners, accepts one loopback connection, and the pipeline Vert.x built for it is
 * checked with {@link VertxInternals#checkPipeline}. Once per process (about 100 ms); a failure
 * fails every start with the message naming the Vert.x version.
 */
public final class PipelineSelfTest {
  private static final long TIMEOUT_SECONDS = 30; // a start on a loaded machine, not the subject
  private static List<String> seen; // guarded by the class

  private PipelineSelfTest() {}

  /** Runs the self-test the first time; throws {@link IllegalStateException} when it failed. */
  public static synchronized void run() throws Exception {
    if (seen == null) {
      seen = probe();
    }
    VertxInternals.checkPipeline(seen, VertxInternals.version());
  }

  private static List<String> probe() throws Exception {
    CompletableFuture<List<String>> names = new CompletableFuture<>();
    Vertx vertx = Vertx.builder().withTransport(new GuardedTransport(new Acceptor(names))).build();
    try {
      // HTTP/1.x only, as the coordinator's listeners are: with h2c on, Vert.x builds the pipeline
      // only once the first bytes say which protocol the connection speaks
      HttpServer server = vertx.createHttpServer(new HttpServerOptions().setHttp2ClearTextEnabled(false))
          .requestHandler(r -> r.response().end()).listen(0, "127.0.0.1").toCompletionStage().toCompletableFuture().get(TIMEOUT_SECONDS, TimeUnit.SECONDS);
      try (Socket s = new Socket()) {
        s.connect(new InetSocketAddress("127.0.0.1", server.actualPort()), (int) TimeUnit.SECONDS.toMillis(TIMEOUT_SECONDS));
        return names.get(TIMEOUT_SECONDS, TimeUnit.SECONDS);
      }
    } finally {
      vertx.close().toCompletionStage().toCompletableFuture().get(TIMEOUT_SECONDS, TimeUnit.SECONDS);
    }
  }

  /** On the listening socket: gives each accepted connection a first handler that reports its pipeline. */
  @ChannelHandler.Sharable
  private static final class Acceptor extends ChannelInboundHandlerAdapter {
    private final CompletableFuture<List<String>> names;

    Acceptor(CompletableFuture<List<String>> names) {
      this.names = names;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
      if (msg instanceof Channel child) {
        child.pipeline().addFirst("rb-pipeline-probe", new ChannelInboundHandlerAdapter() {
          @Override
          public void channelActive(ChannelHandlerContext c) throws Exception {
            // as the connection guard sees it: Vert.x has set the pipeline up when the channel is active
            names.complete(List.copyOf(c.pipeline().names()));
            super.channelActive(c);
          }
        });
      }
      ctx.fireChannelRead(msg);
    }
  }
}
