package io.retrybudget.localredis;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Locale;
import java.util.Optional;

/**
 * The redis-server binaries that com.github.codemonstur:embedded-redis ships, and which one fits a
 * platform: Linux on x86-64, arm64 and 32-bit x86, macOS on x86-64 and arm64. Its Windows binary
 * is Redis 5.0, older than the 6.2 the budget scripts need, so Windows gets none. The choice is a
 * pure function of {@code os.name} and {@code os.arch} ({@link #resource(String, String)}); the
 * launchers ({@link LocalRedis}, the test harness's {@code RedisBinary}) ask it for this JVM.
 */
public final class EmbeddedRedis {
  /** What the jar carries, for messages. */
  static final String CARRIED = "Linux x86-64, arm64 and x86, macOS x86-64 and arm64";

  private EmbeddedRedis() {}

  /**
   * The classpath resource of the binary for a platform, e.g. {@code /redis-server-6.2.7-linux-arm64}
   * for ("Linux", "aarch64"); empty where embedded-redis has no Redis 6.2+ binary for it.
   *
   * @param osName the {@code os.name} system property's value
   * @param osArch the {@code os.arch} system property's value
   * @return the resource's absolute name, or empty
   */
  public static Optional<String> resource(String osName, String osArch) {
    String os = osName.toLowerCase(Locale.ROOT);
    String arch = switch (osArch.toLowerCase(Locale.ROOT)) {
      case "amd64", "x86_64" -> "amd64";
      case "aarch64", "arm64" -> "arm64";
      case "x86", "i386", "i486", "i586", "i686" -> "386";
      default -> "";
    };
    if (os.startsWith("linux")) {
      return switch (arch) {
        case "amd64" -> Optional.of("/redis-server-6.2.6-v5-linux-amd64");
        case "arm64" -> Optional.of("/redis-server-6.2.7-linux-arm64");
        case "386" -> Optional.of("/redis-server-6.2.7-linux-386");
        default -> Optional.empty();
      };
    }
    if (os.startsWith("mac") || os.startsWith("darwin")) {
      return switch (arch) {
        case "amd64" -> Optional.of("/redis-server-6.2.6-v5-darwin-amd64");
        case "arm64" -> Optional.of("/redis-server-6.2.6-v5-darwin-arm64");
        default -> Optional.empty();
      };
    }
    return Optional.empty();
  }

  /**
   * The one-line refusal for a platform without a binary, naming the variable that points the
   * program at a Redis instead.
   *
   * @param osName the {@code os.name} system property's value
   * @param osArch the {@code os.arch} system property's value
   * @param urlVariable the environment variable to set, e.g. {@code REDIS_URL}
   * @return the message
   */
  public static String unsupported(String osName, String osArch, String urlVariable) {
    return "no redis-server on PATH and no embedded-redis binary for " + osName + "/" + osArch
        + " (it carries " + CARRIED + "): install redis-server 6.2+ or set " + urlVariable;
  }

  /**
   * Copies this platform's binary into {@code dir} as an executable {@code redis-server}.
   *
   * @param dir the folder to write it to
   * @param urlVariable named in the refusal where no binary fits
   * @return the binary's path
   * @throws IOException where no binary fits this platform ({@link #unsupported}), embedded-redis
   *     is not on the classpath, or the copy fails
   */
  public static Path extract(Path dir, String urlVariable) throws IOException {
    String osName = System.getProperty("os.name");
    String osArch = System.getProperty("os.arch");
    String resource = resource(osName, osArch)
        .orElseThrow(() -> new IOException(unsupported(osName, osArch, urlVariable)));
    try (InputStream in = EmbeddedRedis.class.getResourceAsStream(resource)) {
      if (in == null) {
        throw new IOException("embedded-redis (" + resource + ") is not on the classpath: set " + urlVariable);
      }
      Path binary = dir.resolve("redis-server");
      Files.copy(in, binary, StandardCopyOption.REPLACE_EXISTING);
      if (!binary.toFile().setExecutable(true)) {
        throw new IOException("cannot make " + binary + " executable");
      }
      return binary;
    }
  }
}
