package io.retrybudget.testing;

import org.testcontainers.DockerClientFactory;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.utility.DockerImageName;

/**
 * A Redis in a container, through Testcontainers: the harness's last resort, where no redis-server
 * binary fits the platform and a Docker engine runs. No fault injection (tests that need it skip).
 */
final class RedisContainer implements AutoCloseable {
  private final GenericContainer<?> container;

  private RedisContainer(GenericContainer<?> container) {
    this.container = container;
  }

  static boolean dockerAvailable() {
    try {
      return DockerClientFactory.instance().isDockerAvailable();
    } catch (RuntimeException | LinkageError e) {
      return false;
    }
  }

  static RedisContainer start() {
    GenericContainer<?> c = new GenericContainer<>(DockerImageName.parse("redis:7.2")).withExposedPorts(6379);
    c.start();
    return new RedisContainer(c);
  }

  String uri() {
    return "redis://" + container.getHost() + ":" + container.getMappedPort(6379);
  }

  @Override
  public void close() {
    container.stop();
  }
}
