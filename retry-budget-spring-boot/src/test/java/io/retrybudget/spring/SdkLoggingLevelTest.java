package io.retrybudget.spring;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.retrybudget.budget.RedisBudgetClient;
import io.retrybudget.testing.Eventually;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.slf4j.LoggerFactory;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.context.event.ApplicationPreparedEvent;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.ApplicationListener;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The SDK logs through {@link System.Logger}; in a Boot application (Logback, Boot's JUL bridge) its
 * records are Logback events under the SDK's logger names, and {@code logging.level.io.retrybudget}
 * decides which are made. The SDK's client connects to a socket that accepts and closes every
 * connection, so it logs on every attempt: a DEBUG line per failed attempt, one WARNING ("not
 * reachable") per 30 s. The socket counts the attempts, so the tests that expect silence know the
 * SDK did have something to say.
 */
@ExtendWith(OutputCaptureExtension.class)
class SdkLoggingLevelTest {
  private static final String CLIENT_LOGGER = RedisBudgetClient.class.getName();
  private static final Duration WAIT = Duration.ofSeconds(20);
  private final ListAppender<ILoggingEvent> events = new ListAppender<>();
  private final AtomicInteger connections = new AtomicInteger();
  private ServerSocket closingRedis;
  private Thread acceptor;
  private ConfigurableApplicationContext context;

  @SpringBootConfiguration
  @EnableAutoConfiguration
  static class App {}

  @BeforeEach
  void startASocketThatClosesEveryConnection() throws IOException {
    closingRedis = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    acceptor = new Thread(() -> {
      while (!closingRedis.isClosed()) {
        try (Socket s = closingRedis.accept()) {
          connections.incrementAndGet(); // closed at once: the client's handshake fails
        } catch (IOException e) {
          return; // the socket was closed by the test
        }
      }
    }, "closing-redis");
    acceptor.setDaemon(true);
    acceptor.start();
  }

  @AfterEach
  void stop() throws Exception {
    if (context != null) {
      context.close();
    }
    rootLogger().detachAppender(events);
    closingRedis.close();
    acceptor.join(5_000);
  }

  private static ch.qos.logback.classic.Logger rootLogger() {
    return ((LoggerContext) LoggerFactory.getILoggerFactory()).getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
  }

  /**
   * A Boot application with {@code logging.level.io.retrybudget=level}; the list appender is put on
   * Logback's root logger after Boot has configured logging and before any bean is made.
   */
  private void start(String level) {
    context = new SpringApplicationBuilder(App.class)
        .web(WebApplicationType.NONE)
        .properties("logging.level.io.retrybudget=" + level,
            "retrybudget.redis.uri=redis://127.0.0.1:" + closingRedis.getLocalPort(),
            "spring.main.banner-mode=off")
        .listeners(new ApplicationListener<ApplicationPreparedEvent>() {
          @Override
          public void onApplicationEvent(ApplicationPreparedEvent event) {
            events.setContext((LoggerContext) LoggerFactory.getILoggerFactory());
            events.start();
            rootLogger().addAppender(events);
          }
        })
        .run();
  }

  /** The SDK's events (loggers under io.retrybudget) at {@code level}. */
  private List<ILoggingEvent> sdkEvents(Level level) {
    List<ILoggingEvent> copy;
    synchronized (events) { // AppenderBase appends under the appender's lock
      copy = new ArrayList<>(events.list);
    }
    return copy.stream().filter(e -> e.getLoggerName().startsWith("io.retrybudget.") && e.getLevel() == level)
        .toList();
  }

  /**
   * Waits until the client has made three connections: its attempts run one after the other on its
   * timer thread, so the first two have ended and logged (or not) what they had to say.
   */
  private void awaitThreeAttempts() {
    Eventually.await("three connect attempts", WAIT, () -> connections.get() >= 3);
  }

  @Test
  void debugLevelBringsTheSdksDebugLinesIntoLogback(CapturedOutput output) {
    start("DEBUG");
    Eventually.await("the SDK's DEBUG line for a failed connect attempt", WAIT,
        () -> sdkEvents(Level.DEBUG).stream().anyMatch(e -> e.getFormattedMessage().startsWith("connect attempt")));
    ILoggingEvent debug = sdkEvents(Level.DEBUG).get(0);
    assertEquals(CLIENT_LOGGER, debug.getLoggerName(), "the SDK's logger name is kept");
    assertTrue(debug.getFormattedMessage().contains("failed"), debug.getFormattedMessage());
    assertTrue(sdkEvents(Level.WARN).stream().anyMatch(e -> e.getFormattedMessage().contains("not reachable")),
        "and its WARNING: " + sdkEvents(Level.WARN));
    // through Boot's console appender, as the application's own lines
    Eventually.await("the DEBUG line on Boot's console", WAIT,
        () -> output.getOut().contains(CLIENT_LOGGER) && output.getOut().contains("connect attempt"));
  }

  @Test
  void warnLevelKeepsTheWarningAndDropsTheDebugLines(CapturedOutput output) {
    start("WARN");
    awaitThreeAttempts();
    assertTrue(sdkEvents(Level.WARN).stream().anyMatch(e -> e.getFormattedMessage().contains("not reachable")),
        "the WARNING is made: " + sdkEvents(Level.WARN));
    assertEquals(List.of(), sdkEvents(Level.DEBUG), "no DEBUG line below the configured level");
    assertTrue(output.getOut().contains("not reachable"), "the WARNING on Boot's console");
    assertFalse(output.toString().contains("connect attempt"), "no DEBUG line on any console");
  }

  @Test
  void offSilencesTheSdkEverywhere(CapturedOutput output) {
    start("OFF");
    awaitThreeAttempts();
    List<ILoggingEvent> sdk;
    synchronized (events) {
      sdk = events.list.stream().filter(e -> e.getLoggerName().startsWith("io.retrybudget.")).toList();
    }
    assertEquals(List.of(), sdk, "no SDK event reaches Logback");
    // nothing on stdout or stderr either: the SDK has no channel of its own around Boot's configuration
    assertFalse(output.toString().contains("not reachable"), output.toString());
    assertFalse(output.toString().contains("connect attempt"), output.toString());
  }
}
