package io.retrybudget.bench.metastable;

import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;

/**
 * The backend process of a real run: one {@link Backend} per arm, each on its own port, with the
 * arm's admission (server-kit's queue for {@link Arm#serverHalf}, else the FIFO queue). Listens,
 * prints {@code READY}, reads {@code GO <epochMillis>} on stdin, serves until the run's end plus
 * a grace second, then writes its per-second table ({@code arm,second,<ServerCore.COLUMNS>}) to the
 * output file and exits. Started by {@link MetastableExperiment}; its arguments are
 * {@code <out.csv> <scenario> <afterSeconds> <Params.encode> <arm>=<port>,...}.
 */
public final class BackendMain {
  private BackendMain() {}

  public static void main(String[] args) throws Exception {
    Path out = Path.of(args[0]);
    Scenario scenario = Scenario.byId(args[1], Integer.parseInt(args[2]));
    Params params = Params.decode(args[3]);
    Map<Arm, Integer> ports = new LinkedHashMap<>();
    for (String kv : args[4].split(",")) {
      String[] p = kv.split("=");
      ports.put(Arm.byId(p[0]), Integer.parseInt(p[1]));
    }
    Vertx vertx = Vertx.vertx(new VertxOptions().setEventLoopPoolSize(Math.max(2, ports.size())));
    Map<Arm, PerSecond> tables = new LinkedHashMap<>();
    List<io.vertx.core.Future<?>> deployed = new ArrayList<>();
    List<Backend> backends = new ArrayList<>();
    Map<Arm, ServerKitAdmission> serverKit = new ConcurrentHashMap<>();
    for (Map.Entry<Arm, Integer> e : ports.entrySet()) {
      PerSecond t = new PerSecond(scenario.totalSeconds(), ServerCore.COLUMNS);
      tables.put(e.getKey(), t);
      Arm arm = e.getKey();
      Backend b = new Backend(e.getValue(), params, scenario, scheduler -> {
        if (!arm.serverHalf()) {
          return new FifoAdmission(params.workers(), params.queueLimit());
        }
        ServerKitAdmission a = ServerKitAdmission.of(params, System::nanoTime, scheduler,
            () -> ThreadLocalRandom.current().nextDouble());
        serverKit.put(arm, a);
        return a;
      }, t);
      backends.add(b);
      deployed.add(vertx.deployVerticle(b));
    }
    io.vertx.core.Future.all(deployed).await();
    System.out.println("READY");
    System.out.flush();
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    String go = in.readLine();
    if (go == null || !go.startsWith("GO ")) {
      throw new IllegalStateException("expected GO <epochMillis> on stdin, got " + go);
    }
    long epoch = Long.parseLong(go.substring(3).trim());
    backends.forEach(b -> b.begin(epoch));
    long end = epoch + scenario.totalSeconds() * 1000L + 1000;
    Thread.sleep(Math.max(0, end - System.currentTimeMillis()));
    vertx.close().await();
    serverKit.forEach((arm, a) -> System.out.println("admission of " + arm.id() + ": " + a.stats()));
    try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(out))) {
      w.println("arm,second," + String.join(",", ServerCore.COLUMNS));
      for (Map.Entry<Arm, PerSecond> e : tables.entrySet()) {
        PerSecond t = e.getValue();
        for (int s = 0; s < t.seconds(); s++) {
          StringBuilder b = new StringBuilder(e.getKey().id()).append(',').append(s);
          for (int c = 0; c < t.columns().size(); c++) {
            b.append(',').append(t.get(s, c));
          }
          w.println(b);
        }
      }
    }
    System.out.println("DONE");
  }
}
