package io.retrybudget.coordinator;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.WebSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;

/**
 * A real headless Chromium driven over the DevTools protocol (a WebSocket, JSON commands): one page,
 * its console errors, uncaught exceptions and log errors (CSP violations, failed loads) collected.
 * Found as {@code chromium} on PATH or at {@code CHROMIUM_BINARY}; tests that need it are skipped,
 * saying why, where it is absent.
 */
final class Chromium implements AutoCloseable {
  private static final Pattern LISTENING = Pattern.compile("DevTools listening on (ws://[^\\s]+)");
  private static final Duration COMMAND_TIMEOUT = Duration.ofSeconds(20);

  private final Process process;
  private final Path profile;
  private final WebSocket socket;
  private final AtomicInteger ids = new AtomicInteger();
  private final Map<Integer, CompletableFuture<JsonObject>> pending = new ConcurrentHashMap<>();
  private final List<String> errors = new CopyOnWriteArrayList<>();
  private final String sessionId;

  static Path require() {
    String configured = System.getenv("CHROMIUM_BINARY");
    if (configured != null && !configured.isBlank()) {
      return Path.of(configured);
    }
    for (String dir : System.getenv().getOrDefault("PATH", "").split(java.io.File.pathSeparator)) {
      for (String name : new String[] {"chromium", "chromium-browser"}) {
        Path p = Path.of(dir, name);
        if (Files.isExecutable(p)) {
          return p;
        }
      }
    }
    Assumptions.assumeTrue(false, "chromium not on PATH: the browser test is skipped "
        + "(apt-get install chromium, as .ci/run does, or set CHROMIUM_BINARY)");
    return null;
  }

  Chromium(Path binary, int width, int height) throws Exception {
    profile = Files.createTempDirectory("chromium-profile");
    process = new ProcessBuilder(binary.toString(), "--headless", "--no-sandbox", "--disable-gpu",
        "--disable-dev-shm-usage", "--no-first-run", "--no-default-browser-check", "--disable-extensions",
        "--disable-background-networking", "--disable-sync", "--disable-component-update", "--mute-audio",
        "--hide-scrollbars", "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
        "--user-data-dir=" + profile, "--window-size=" + width + "," + height, "about:blank")
        .redirectErrorStream(true).start();
    String browserUrl = null;
    try {
      BufferedReader out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
      CompletableFuture<String> url = CompletableFuture.supplyAsync(() -> {
        try {
          StringBuilder seen = new StringBuilder();
          for (String line; (line = out.readLine()) != null; ) {
            Matcher m = LISTENING.matcher(line);
            if (m.find()) {
              drain(out);
              return m.group(1);
            }
            if (seen.length() < 4000) {
              seen.append(line).append('\n');
            }
          }
          throw new IllegalStateException("chromium exited before its DevTools endpoint was up:\n" + seen);
        } catch (IOException e) {
          throw new IllegalStateException(e);
        }
      });
      browserUrl = url.get(20, TimeUnit.SECONDS);
      socket = HttpClient.newHttpClient().newWebSocketBuilder().connectTimeout(Duration.ofSeconds(5))
          .buildAsync(URI.create(browserUrl), new Listener()).get(10, TimeUnit.SECONDS);
      String targetId = command(null, "Target.createTarget", new JsonObject().put("url", "about:blank"))
          .getString("targetId");
      sessionId = command(null, "Target.attachToTarget", new JsonObject().put("targetId", targetId).put("flatten", true))
          .getString("sessionId");
      send("Runtime.enable", new JsonObject());
      send("Log.enable", new JsonObject());
      send("Page.enable", new JsonObject());
      send("Emulation.setDeviceMetricsOverride", new JsonObject().put("width", width).put("height", height)
          .put("deviceScaleFactor", 1).put("mobile", false));
    } catch (Exception | Error e) {
      close();
      throw e;
    }
  }

  /** Reads chromium's output to its end in the background, so it never blocks on a full pipe. */
  private static void drain(BufferedReader out) {
    Thread t = new Thread(() -> {
      try {
        while (out.readLine() != null) {
          // discarded
        }
      } catch (IOException ignored) {
        // the process ended
      }
    }, "chromium-output");
    t.setDaemon(true);
    t.start();
  }

  /** A command to the page. */
  JsonObject send(String method, JsonObject params) throws Exception {
    return command(sessionId, method, params);
  }

  private JsonObject command(String session, String method, JsonObject params) throws Exception {
    int id = ids.incrementAndGet();
    JsonObject msg = new JsonObject().put("id", id).put("method", method).put("params", params);
    if (session != null) {
      msg.put("sessionId", session);
    }
    CompletableFuture<JsonObject> answer = new CompletableFuture<>();
    pending.put(id, answer);
    socket.sendText(msg.encode(), true).get(5, TimeUnit.SECONDS);
    JsonObject reply;
    try {
      reply = answer.get(COMMAND_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
    } finally {
      pending.remove(id);
    }
    if (reply.containsKey("error")) {
      throw new IllegalStateException(method + " failed: " + reply.getJsonObject("error").encode());
    }
    return reply.getJsonObject("result", new JsonObject());
  }

  /** Loads a page and waits for its load event. */
  void navigate(String url) throws Exception {
    JsonObject r = send("Page.navigate", new JsonObject().put("url", url));
    if (r.containsKey("errorText")) {
      throw new IllegalStateException("navigation to " + url + " failed: " + r.getString("errorText"));
    }
    await("document.readyState === 'complete'", "true", 10_000);
  }

  /** Evaluates an expression in the page (awaiting a promise); returns its value as JSON text. */
  String eval(String expression) throws Exception {
    JsonObject r = send("Runtime.evaluate", new JsonObject().put("expression", "Promise.resolve(" + expression + ").then(v => JSON.stringify(v))")
        .put("awaitPromise", true).put("returnByValue", true));
    if (r.containsKey("exceptionDetails")) {
      throw new AssertionError("page threw on " + expression + ": " + r.getJsonObject("exceptionDetails").encode());
    }
    return r.getJsonObject("result").getString("value");
  }

  /**
   * Waits, in the page (its own timers, no sleep here), until {@code condition} holds, then returns
   * {@code value}'s JSON; fails with the last value seen after {@code timeoutMillis}.
   */
  String await(String condition, String value, long timeoutMillis) throws Exception {
    String js = "new Promise(resolve => { const end = Date.now() + " + timeoutMillis + ";"
        + " const check = () => { let ok = false; try { ok = (" + condition + "); } catch (e) { ok = false; }"
        + " if (ok) { resolve({ok: true, v: (" + value + ")}); }"
        + " else if (Date.now() > end) { let v = null; try { v = (" + value + "); } catch (e) { v = String(e); }"
        + " resolve({ok: false, v: v, body: document.body ? document.body.innerText.slice(0, 2000) : ''}); }"
        + " else { setTimeout(check, 50); } }; check(); })";
    JsonObject r = null;
    // a click that navigates destroys the document the promise runs in: ask again in the new one
    for (int attempt = 0; r == null; attempt++) {
      try {
        r = new JsonObject(eval(js));
      } catch (IllegalStateException e) {
        if (attempt >= 20 || e.getMessage() == null || !e.getMessage().contains("navigated or closed")) {
          throw e;
        }
      }
    }
    if (!r.getBoolean("ok")) {
      throw new AssertionError("the page never had " + condition + " within " + timeoutMillis + " ms; "
          + value + " = " + r.getValue("v") + "; page text:\n" + r.getString("body"));
    }
    Object v = r.getValue("v");
    return v instanceof String s ? s : String.valueOf(v);
  }

  /** A PNG of the page as it is. */
  void screenshot(Path file) throws Exception {
    String data = send("Page.captureScreenshot", new JsonObject().put("format", "png").put("captureBeyondViewport", false))
        .getString("data");
    Files.createDirectories(file.toAbsolutePath().getParent());
    Files.write(file, Base64.getDecoder().decode(data));
  }

  /** Console errors, uncaught exceptions and log entries of level error, as seen so far. */
  List<String> errors() {
    return new ArrayList<>(errors);
  }

  private void onEvent(JsonObject msg) {
    String method = msg.getString("method");
    JsonObject p = msg.getJsonObject("params", new JsonObject());
    if ("Runtime.consoleAPICalled".equals(method) && ("error".equals(p.getString("type"))
        || "assert".equals(p.getString("type")) || "warning".equals(p.getString("type")))) {
      JsonArray args = p.getJsonArray("args", new JsonArray());
      errors.add("console." + p.getString("type") + ": " + args.encode());
    } else if ("Runtime.exceptionThrown".equals(method)) {
      errors.add("uncaught: " + p.getJsonObject("exceptionDetails").encode());
    } else if ("Log.entryAdded".equals(method)) {
      JsonObject entry = p.getJsonObject("entry");
      if ("error".equals(entry.getString("level")) || "warning".equals(entry.getString("level"))) {
        errors.add("log " + entry.getString("level") + " (" + entry.getString("source") + "): "
            + entry.getString("text") + " " + entry.getString("url", ""));
      }
    }
  }

  private final class Listener implements WebSocket.Listener {
    private final StringBuilder partial = new StringBuilder();

    @Override
    public CompletionStage<?> onText(WebSocket ws, CharSequence data, boolean last) {
      partial.append(data);
      if (last) {
        JsonObject msg = new JsonObject(partial.toString());
        partial.setLength(0);
        Integer id = msg.getInteger("id");
        if (id != null) {
          CompletableFuture<JsonObject> f = pending.get(id);
          if (f != null) {
            f.complete(msg);
          }
        } else {
          onEvent(msg);
        }
      }
      ws.request(1);
      return null;
    }
  }

  @Override
  public void close() {
    if (socket != null) {
      socket.abort();
    }
    process.destroy();
    try {
      if (!process.waitFor(5, TimeUnit.SECONDS)) {
        process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      process.destroyForcibly();
    }
    try (Stream<Path> files = Files.walk(profile)) {
      files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException ignored) {
      // a temporary profile; the OS cleans what is left
    }
  }
}
