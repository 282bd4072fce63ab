package io.retrybudget.localredis;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** Which embedded-redis binary fits a platform, as a pure function of os.name and os.arch. */
class EmbeddedRedisTest {
  @Test
  void everyPlatformTheJarCarriesGetsItsBinary() {
    assertEquals(Optional.of("/redis-server-6.2.6-v5-linux-amd64"), EmbeddedRedis.resource("Linux", "amd64"));
    assertEquals(Optional.of("/redis-server-6.2.6-v5-linux-amd64"), EmbeddedRedis.resource("Linux", "x86_64"));
    assertEquals(Optional.of("/redis-server-6.2.7-linux-arm64"), EmbeddedRedis.resource("Linux", "aarch64"));
    assertEquals(Optional.of("/redis-server-6.2.7-linux-386"), EmbeddedRedis.resource("Linux", "i386"));
    assertEquals(Optional.of("/redis-server-6.2.7-linux-386"), EmbeddedRedis.resource("Linux", "x86"));
    assertEquals(Optional.of("/redis-server-6.2.6-v5-darwin-arm64"), EmbeddedRedis.resource("Mac OS X", "aarch64"));
    assertEquals(Optional.of("/redis-server-6.2.6-v5-darwin-amd64"), EmbeddedRedis.resource("Mac OS X", "x86_64"));
  }

  @Test
  void elsewhereNone() {
    // Windows: embedded-redis carries Redis 5.0 only, older than the scripts need
    assertEquals(Optional.empty(), EmbeddedRedis.resource("Windows 11", "amd64"));
    assertEquals(Optional.empty(), EmbeddedRedis.resource("Linux", "riscv64"));
    assertEquals(Optional.empty(), EmbeddedRedis.resource("Linux", "s390x"));
    assertEquals(Optional.empty(), EmbeddedRedis.resource("FreeBSD", "amd64"));
    assertEquals(Optional.empty(), EmbeddedRedis.resource("Mac OS X", "x86"));
  }

  @Test
  void theRefusalIsOneLineNamingTheVariable() {
    String message = EmbeddedRedis.unsupported("Windows 11", "amd64", "REDIS_URL");
    assertFalse(message.contains("\n"), message);
    assertTrue(message.contains("Windows 11/amd64") && message.endsWith("set REDIS_URL"), message);
  }

  /** The names follow embedded-redis's jar: a version whose names differ fails here, not on a user's Mac. */
  @Test
  void everyResourceChosenIsInTheJar() throws IOException {
    for (List<String> platform : List.of(List.of("Linux", "amd64"), List.of("Linux", "aarch64"), List.of("Linux", "i686"),
        List.of("Mac OS X", "x86_64"), List.of("Mac OS X", "aarch64"))) {
      String resource = EmbeddedRedis.resource(platform.get(0), platform.get(1)).orElseThrow();
      try (InputStream in = EmbeddedRedis.class.getResourceAsStream(resource)) {
        assertNotNull(in, resource + " for " + platform);
        assertTrue(in.readNBytes(4).length == 4, resource);
      }
    }
  }
}
