package io.retrybudget.localredis;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** A real redis-server, started and stopped: it answers on loopback, and nothing is left behind. */
class LocalRedisTest {
  private static String ping(int port) throws IOException {
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress("127.0.0.1", port), 2_000);
      s.setSoTimeout(5_000);
      s.getOutputStream().write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
      InputStream in = s.getInputStream();
      byte[] reply = new byte[7];
      int n = 0;
      while (n < reply.length) {
        int r = in.read(reply, n, reply.length - n);
        if (r < 0) {
          break;
        }
        n += r;
      }
      return new String(reply, 0, n, StandardCharsets.US_ASCII);
    }
  }

  @Test
  void startsOnAFreeLoopbackPortAndLeavesNothingBehind() throws Exception {
    Path folder;
    int port;
    try (LocalRedis redis = LocalRedis.start()) {
      port = redis.port();
      assertEquals("redis://127.0.0.1:" + port, redis.uri());
      assertEquals("+PONG\r\n", ping(port));
      assertTrue(Files.isExecutable(Path.of(redis.binary())), redis.binary());
      folder = redis.folder();
      assertTrue(Files.isDirectory(folder));
    }
    assertThrows(IOException.class, () -> ping(port), "stopped");
    assertFalse(Files.exists(folder), "its folder is deleted: " + folder);
  }
}
