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
import java.util.concurrent.ThreadLocalRandom;

/**
 * The backend process of a real run: one {@link Backend} per unit of every round, each on its own
 * port and event loop, with the unit's admission (server-kit's queue for {@link Arm#serverHalf},
 * else the FIFO queue); they serve the fleet's warm-up from the start. Prints {@code READY}; then
 * for each round reads {@code GO <round> <epochMillis>} on stdin, runs the round's units until its
 * end plus a grace second, writes the round's table ({@code scenario,arm,second,<ServerCore.COLUMNS>})
 * to {@code backend-round<r>.csv} in the output folder and prints {@code DONE <round>}. Started by
 * {@link RealRun}; its arguments are {@code <outDir> <afterSeconds> <Params.encode> <Round.encode>...}.
 */
public final class BackendMain {
  private BackendMain() {}

  public static void main(String[] args) throws Exception {
    Path outDir = Path.of(args[0]);
    int after = Integer.parseInt(args[1]);
    Params base = Params.decode(args[2]);
    List<Round> rounds = new ArrayList<>();
    for (int i = 3; i < args.length; i++) {
      rounds.add(Round.decode(args[i], after));
    }
    compileOnFakeTime(base.withClients(rounds.get(0).clients()));
    int widest = rounds.stream().mapToInt(r -> r.units().size()).max().orElse(1);
    // units of one round are deployed one after another: each gets an event loop of its own
    Vertx vertx = Vertx.vertx(new VertxOptions().setEventLoopPoolSize(Math.max(2, widest)));
    Map<Round.Unit, Backend> backends = new LinkedHashMap<>();
    Map<Round.Unit, PerSecond> tables = new LinkedHashMap<>();
    Map<Round.Unit, ServerKitAdmission> serverKit = new LinkedHashMap<>();
    for (Round round : rounds) {
      Params params = base.withClients(round.clients());
      for (Round.Unit unit : round.units()) {
        PerSecond t = new PerSecond(unit.scenario().totalSeconds(), ServerCore.COLUMNS);
        tables.put(unit, t);
        Backend b = new Backend(unit.port(), params, unit.scenario(), scheduler -> {
          if (!unit.arm().serverHalf()) {
            return new FifoAdmission(params.workers(), params.queueLimit());
          }
          ServerKitAdmission a = ServerKitAdmission.of(params, System::nanoTime, scheduler,
              () -> ThreadLocalRandom.current().nextDouble());
          synchronized (serverKit) {
            serverKit.put(unit, a); // the last one made is the run's (the first serves the warm-up)
          }
          return a;
        }, t);
        backends.put(unit, b);
        vertx.deployVerticle(b).await();
      }
    }
    System.out.println("READY");
    System.out.flush();
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    for (Round round : rounds) {
      long epoch = FleetMain.awaitGo(in, round.index());
      if (round.index() == 0) {
        // collect what the warm-up left before the clock starts (1 s after GO; later rounds collect
        // after the round before): a young pause that copied it for the first time took 200 ms at
        // second 6 of a round
        System.gc();
      }
      for (Round.Unit unit : round.units()) {
        backends.get(unit).begin(epoch);
      }
      long end = epoch + round.seconds() * 1000L + 1000;
      Thread.sleep(Math.max(0, end - System.currentTimeMillis()));
      try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(outDir.resolve("backend-round" + round.index()
          + ".csv")))) {
        w.println("scenario,arm,second," + String.join(",", ServerCore.COLUMNS));
        for (Round.Unit unit : round.units()) {
          PerSecond t = tables.get(unit);
          for (int s = 0; s < t.seconds(); s++) {
            StringBuilder b = new StringBuilder(unit.scenario().id()).append(',').append(unit.arm().id()).append(',')
                .append(s);
            for (int c = 0; c < t.columns().size(); c++) {
              b.append(',').append(t.get(s, c));
            }
            w.println(b);
          }
        }
      }
      synchronized (serverKit) {
        for (Round.Unit unit : round.units()) {
          if (serverKit.containsKey(unit)) {
            System.out.println("admission of " + unit.tag() + ": " + serverKit.get(unit).stats());
          }
        }
      }
      System.gc(); // what this round left, while the clients build the next one (300-1,300 ms at 1 GB)
      System.out.println("DONE " + round.index());
      System.out.flush();
    }
    vertx.close().await();
  }

  /**
   * Runs the capacity scenario on fake time ({@link ModelRun}) through the server-kit admission and
   * the FIFO queue before the backend listens, so that the JIT has compiled their overload paths
   * (queueing, CoDel and LIFO, shedding with pushback, deadline answers) before any round's clock
   * starts. The fleet's warm-up cannot: it runs against the first round's backends only, at no more
   * than the capacity, and the server half's first trigger otherwise stopped its event loop for 129
   * ms (no collection ran: the code was being compiled and deoptimised while it shed).
   */
  static void compileOnFakeTime(Params params) {
    long start = System.nanoTime();
    for (Arm arm : List.of(Arm.FLEET_SERVER, Arm.NAIVE)) {
      ModelRun.run(params, Scenario.capacity(5), arm, 7);
    }
    System.out.println("compiled the admission paths on fake time in " + (System.nanoTime() - start) / 1_000_000
        + " ms");
  }
}
