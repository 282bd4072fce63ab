package io.retrybudget.coordinator;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The attacks of issue 12, written once for the hostile test (HostileProcessTest) and the
 * before/after measurement (bench/wrk/hostile.sh, via {@link #main}). JDK only, so it runs from
 * the test-classes folder alone. Every loop is bounded in count and time; loopback targets only.
 */
final class HostileAttacks {
  private HostileAttacks() {}

  /**
   * Many non-blocking sockets driven by one selector: each sends its payload (as fast as the
   * server takes it), then optionally one more byte every {@code dripMillis}; what the server
   * sends is read and dropped; when the server closes, the socket is closed here too (so a cap
   * that closes connections frees this side's descriptors as well).
   */
  static final class Swarm implements AutoCloseable {
    private final Selector selector;
    private final int port;
    private final List<String> sources;
    private final byte[] payload;
    private final long dripNanos;
    private final List<Sock> socks = new ArrayList<>();
    private int nextSource;
    private final ByteBuffer sink = ByteBuffer.allocateDirect(64 * 1024);
    int open;
    int closedByServer;
    int connectFailures;
    long maxOpen;
    private final List<Long> closeMillis = new ArrayList<>();

    private final class Sock {
      final SocketChannel ch;
      final long startNanos = System.nanoTime();
      final ByteBuffer out = ByteBuffer.wrap(payload);
      long nextDrip;

      Sock(SocketChannel ch) {
        this.ch = ch;
      }
    }

    Swarm(int port, List<String> sources, String payload, long dripMillis) throws IOException {
      this.selector = Selector.open();
      this.port = port;
      this.sources = sources;
      this.payload = payload.getBytes(StandardCharsets.ISO_8859_1);
      this.dripNanos = dripMillis * 1_000_000L;
    }

    /** Opens {@code n} connections, at most {@code maxOpenAtOnce} open on this side at a time. */
    void connect(int n, int maxOpenAtOnce, long withinMillis) throws IOException {
      connect(n, maxOpenAtOnce, withinMillis, Integer.MAX_VALUE);
    }

    /** As {@link #connect(int, int, long)}, at most {@code perSecond} new connections a second. */
    void connect(int n, int maxOpenAtOnce, long withinMillis, int perSecond) throws IOException {
      long begin = System.nanoTime();
      long deadline = begin + withinMillis * 1_000_000L;
      int started = 0;
      while (started < n && System.nanoTime() < deadline) {
        long allowed = perSecond == Integer.MAX_VALUE ? n
            : Math.max(1, (System.nanoTime() - begin) / 1_000_000L * perSecond / 1_000);
        while (started < n && open < maxOpenAtOnce && started < allowed) {
          SocketChannel ch = SocketChannel.open();
          try {
            ch.configureBlocking(false);
            ch.setOption(StandardSocketOptions.SO_LINGER, 0);
            if (!sources.isEmpty()) {
              ch.bind(new InetSocketAddress(sources.get(nextSource++ % sources.size()), 0));
            }
            Sock s = new Sock(ch);
            if (ch.connect(new InetSocketAddress("127.0.0.1", port))) {
              ch.register(selector, interest(s), s);
            } else {
              ch.register(selector, SelectionKey.OP_CONNECT, s);
            }
            socks.add(s);
            open++;
            maxOpen = Math.max(maxOpen, open);
          } catch (IOException e) {
            ch.close();
            connectFailures++;
          }
          started++;
        }
        pump(perSecond == Integer.MAX_VALUE ? 20 : 5);
      }
    }

    private int interest(Sock s) {
      return SelectionKey.OP_READ | (s.out.hasRemaining() ? SelectionKey.OP_WRITE : 0);
    }

    /** Drives every socket for {@code millis}. */
    void pump(long millis) throws IOException {
      long end = System.nanoTime() + millis * 1_000_000L;
      do {
        selector.select(10);
        Iterator<SelectionKey> it = selector.selectedKeys().iterator();
        while (it.hasNext()) {
          SelectionKey k = it.next();
          it.remove();
          Sock s = (Sock) k.attachment();
          try {
            if (k.isValid() && k.isConnectable()) {
              s.ch.finishConnect();
              k.interestOps(interest(s));
            }
            if (k.isValid() && k.isWritable()) {
              s.ch.write(s.out);
              if (!s.out.hasRemaining()) {
                k.interestOps(SelectionKey.OP_READ);
                s.nextDrip = System.nanoTime() + dripNanos;
              }
            }
            if (k.isValid() && k.isReadable()) {
              sink.clear();
              if (s.ch.read(sink) < 0) {
                serverClosed(s, k);
              }
            }
          } catch (IOException e) {
            serverClosed(s, k);
          }
        }
        if (dripNanos > 0) {
          drip();
        }
      } while (System.nanoTime() < end);
    }

    private void drip() {
      long now = System.nanoTime();
      for (Sock s : socks) {
        if (s.ch.isOpen() && !s.out.hasRemaining() && now - s.nextDrip >= 0) {
          try {
            s.ch.write(ByteBuffer.wrap(new byte[] {'a'}));
          } catch (IOException e) {
            // the server closed it; the read side notices
          }
          s.nextDrip = now + dripNanos;
        }
      }
    }

    private void serverClosed(Sock s, SelectionKey k) throws IOException {
      if (s.ch.isOpen()) {
        k.cancel();
        s.ch.close();
        open--;
        closedByServer++;
        closeMillis.add((System.nanoTime() - s.startNanos) / 1_000_000);
      }
    }

    /** The longest a connection the server closed had lived, ms. */
    long longestLife() {
      return closeMillis.stream().mapToLong(Long::longValue).max().orElse(-1);
    }

    @Override
    public void close() throws IOException {
      for (Sock s : socks) {
        s.ch.close();
      }
      selector.close();
    }
  }

  /** /health/live on a fresh connection every {@code everyMillis}, on its own thread. */
  static final class Prober implements AutoCloseable {
    final AtomicLong maxMillis = new AtomicLong();
    final AtomicInteger probes = new AtomicInteger();
    final AtomicInteger failures = new AtomicInteger();
    final AtomicInteger failedInARow = new AtomicInteger();
    final AtomicInteger maxFailedInARow = new AtomicInteger();
    private final java.util.concurrent.ScheduledExecutorService timer =
        java.util.concurrent.Executors.newSingleThreadScheduledExecutor(r -> {
          Thread t = new Thread(r, "live-prober");
          t.setDaemon(true);
          return t;
        });

    private final long born = System.nanoTime();
    final List<String> slow = new ArrayList<>();
    /** When each missed probe began, ms since the prober started (guarded by {@link #slow}). */
    private final List<Long> missedAt = new ArrayList<>();
    /** Each missed probe's start and end, System.nanoTime() (guarded by {@link #slow}). */
    private final List<long[]> missed = new ArrayList<>();

    /** Missed probes during which {@code stalls} saw no stall of the machine: the server's own misses. */
    int missesOutside(MachineStalls stalls) {
      synchronized (slow) {
        return (int) missed.stream().filter(m -> !stalls.during(m[0], m[1])).count();
      }
    }

    /** Probes that began in [fromMillis, toMillis] (since the prober started) and missed. */
    int missesBetween(long fromMillis, long toMillis) {
      synchronized (slow) {
        return (int) missedAt.stream().filter(t -> t >= fromMillis && t <= toMillis).count();
      }
    }

    /** Milliseconds since the prober started. */
    long at() {
      return (System.nanoTime() - born) / 1_000_000;
    }

    Prober(int port, long everyMillis) {
      timer.scheduleWithFixedDelay(() -> {
        long start = System.nanoTime();
        boolean answered = live(port, 1_000);
        long ms = (System.nanoTime() - start) / 1_000_000;
        boolean ok = answered && ms <= 1_000; // connect and answer together within the second
        probes.incrementAndGet();
        maxMillis.accumulateAndGet(ms, Math::max);
        if (ok) {
          failedInARow.set(0);
        } else {
          maxFailedInARow.accumulateAndGet(failedInARow.incrementAndGet(), Math::max);
          failures.incrementAndGet();
          synchronized (slow) {
            missedAt.add((start - born) / 1_000_000);
            missed.add(new long[] {start, System.nanoTime()});
            slow.add((start - born) / 1_000_000 + " ms: " + ms + " ms");
          }
        }
      }, 0, everyMillis, java.util.concurrent.TimeUnit.MILLISECONDS);
    }

    @Override
    public void close() throws InterruptedException {
      timer.shutdownNow();
      timer.awaitTermination(5, java.util.concurrent.TimeUnit.SECONDS);
    }

    String summary() {
      synchronized (slow) {
        return probes.get() + " probes, " + failures.get() + " failed or slower than 1 s, slowest " + maxMillis.get()
            + " ms (slowest connect " + SLOWEST_CONNECT_MILLIS.get() + " ms)"
            + (slow.isEmpty() ? "" : "; first misses at " + slow.subList(0, Math.min(10, slow.size())));
      }
    }
  }

  /**
   * The control for a {@link Prober}: PING on a fresh connection to a redis-server, a process of its
   * own that does nothing else, every 50 ms. A PING that takes over {@link #STALL_MS} (it takes about
   * 1 ms) means the machine kept processes off its cores: at a load average of 16 on 2 cores a
   * runnable thread can wait a second for one. A probe of the server that missed while such a stall
   * was under way says nothing about the server; one that missed while the control answered at once
   * does.
   */
  static final class MachineStalls implements AutoCloseable {
    static final long STALL_MS = 300;
    private final List<long[]> stalls = new ArrayList<>();
    private final java.util.concurrent.ScheduledExecutorService timer =
        java.util.concurrent.Executors.newSingleThreadScheduledExecutor(r -> {
          Thread t = new Thread(r, "stall-control");
          t.setDaemon(true);
          return t;
        });

    MachineStalls(int redisPort) {
      timer.scheduleWithFixedDelay(() -> {
        long start = System.nanoTime();
        boolean ok = ping(redisPort);
        long end = System.nanoTime();
        if (!ok || end - start > STALL_MS * 1_000_000L) {
          synchronized (stalls) {
            stalls.add(new long[] {start, end});
          }
        }
      }, 0, 50, java.util.concurrent.TimeUnit.MILLISECONDS);
    }

    /** Whether a stall overlapped [fromNanos, toNanos]. */
    boolean during(long fromNanos, long toNanos) {
      synchronized (stalls) {
        return stalls.stream().anyMatch(s -> s[0] <= toNanos && s[1] >= fromNanos);
      }
    }

    int count() {
      synchronized (stalls) {
        return stalls.size();
      }
    }

    private static boolean ping(int port) {
      try (Socket s = new Socket()) {
        s.connect(new InetSocketAddress("127.0.0.1", port), 5_000);
        s.setSoTimeout(5_000);
        s.getOutputStream().write("PING\r\n".getBytes(StandardCharsets.ISO_8859_1));
        return new String(s.getInputStream().readNBytes(5), StandardCharsets.ISO_8859_1).equals("+PONG");
      } catch (IOException e) {
        return false;
      }
    }

    @Override
    public void close() throws InterruptedException {
      timer.shutdownNow();
      timer.awaitTermination(5, java.util.concurrent.TimeUnit.SECONDS);
    }
  }

  /** One GET /health/live: true when 200 came within {@code timeoutMillis}. */
  static final AtomicLong SLOWEST_CONNECT_MILLIS = new AtomicLong();

  static boolean live(int port, int timeoutMillis) {
    try (Socket s = new Socket()) {
      long start = System.nanoTime();
      s.connect(new InetSocketAddress("127.0.0.1", port), timeoutMillis);
      SLOWEST_CONNECT_MILLIS.accumulateAndGet((System.nanoTime() - start) / 1_000_000, Math::max);
      s.setSoTimeout(timeoutMillis);
      s.getOutputStream().write("GET /health/live HTTP/1.1\r\nHost: p\r\nConnection: close\r\n\r\n"
          .getBytes(StandardCharsets.ISO_8859_1));
      byte[] head = s.getInputStream().readNBytes(12);
      return new String(head, StandardCharsets.ISO_8859_1).equals("HTTP/1.1 200");
    } catch (IOException e) {
      return false;
    }
  }

  /** Distinct unknown methods over one keep-alive connection; returns how many were answered. */
  static int methodFlood(int port, int n, String prefix) {
    int answered = 0;
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress("127.0.0.1", port), 2_000);
      s.setSoTimeout(5_000);
      InputStream in = s.getInputStream();
      int batch = 200;
      for (int sent = 0; sent < n; sent += batch) {
        StringBuilder b = new StringBuilder();
        for (int i = sent; i < Math.min(n, sent + batch); i++) {
          b.append(prefix).append(i).append(" /v1/budgets/x HTTP/1.1\r\nHost: f\r\n\r\n");
        }
        s.getOutputStream().write(b.toString().getBytes(StandardCharsets.ISO_8859_1));
        for (int i = sent; i < Math.min(n, sent + batch); i++) {
          skipAnswer(in);
          answered++;
        }
      }
    } catch (IOException e) {
      // the server closed or died: the count says how far it got
    }
    return answered;
  }

  private static void skipAnswer(InputStream in) throws IOException {
    StringBuilder head = new StringBuilder();
    while (!head.toString().endsWith("\r\n\r\n")) {
      int c = in.read();
      if (c < 0) {
        throw new IOException("closed");
      }
      head.append((char) c);
    }
    int length = 0;
    for (String line : head.toString().split("\r\n")) {
      if (line.toLowerCase(java.util.Locale.ROOT).startsWith("content-length:")) {
        length = Integer.parseInt(line.substring(15).trim());
      }
    }
    in.readNBytes(length);
  }

  /** The server's own count of its open connections (retry_budget_http_connections), or -1. */
  static int serverConnections(int port) {
    String m = metrics(port);
    java.util.regex.Matcher x = java.util.regex.Pattern.compile("(?m)^retry_budget_http_connections(?:\\{listener=\"api\"})? ([0-9.eE+]+)$")
        .matcher(m == null ? "" : m);
    return x.find() ? (int) Double.parseDouble(x.group(1)) : -1;
  }

  /** Lines of GET /metrics, or -1 when it does not answer. */
  static int metricsLines(int port) {
    String m = metrics(port);
    return m == null ? -1 : (int) m.lines().count();
  }

  private static String metrics(int port) {
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress("127.0.0.1", port), 2_000);
      s.setSoTimeout(10_000);
      s.getOutputStream().write("GET /metrics HTTP/1.1\r\nHost: m\r\nConnection: close\r\n\r\n"
          .getBytes(StandardCharsets.ISO_8859_1));
      String all = new String(s.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      int body = all.indexOf("\r\n\r\n");
      return body < 0 ? null : all.substring(body + 4);
    } catch (IOException e) {
      return null;
    }
  }

  /** Resident set size of a process, MB (Linux /proc), or -1. */
  static long rssMb(long pid) {
    try {
      for (String line : Files.readAllLines(Path.of("/proc", Long.toString(pid), "status"))) {
        if (line.startsWith("VmRSS:")) {
          return Long.parseLong(line.replaceAll("[^0-9]", "")) / 1024;
        }
      }
    } catch (IOException | NumberFormatException e) {
      return -1;
    }
    return -1;
  }

  /** The unauthenticated partial body of the issue: 65,000 of 65,536 announced bytes, then nothing. */
  static String partialBody() {
    return "POST /v1/budgets/x/retries HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n"
        + "Content-Length: 65536\r\n\r\n" + "x".repeat(65_000);
  }

  /** Connection rates of the attacks: fast, yet below what floods the kernel's accept queue here. */
  static final int PARTIAL_PER_SECOND = 1_500;
  static final int IDLE_PER_SECOND = 1_500;
  static final String SLOW_HEADER = "GET /health/live HTTP/1.1\r\nHost: s\r\nX-Slow: ";
  static final List<String> SOURCES = List.of("127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5");

  /**
   * The measurement: {@code java -cp coordinator/target/test-classes io.retrybudget.coordinator.HostileAttacks
   * PORT PID [methods] [partial] [idle] [slow]} against a running coordinator; prints one figure a line.
   * With {@code -DmanagementPort=N} the probes and scrapes go to the management listener, and a
   * second prober on the API port is reported beside it.
   */
  public static void main(String[] args) throws Exception {
    int port = Integer.parseInt(args[0]);
    long pid = Long.parseLong(args[1]);
    int methods = args.length > 2 ? Integer.parseInt(args[2]) : 20_000;
    int partial = args.length > 3 ? Integer.parseInt(args[3]) : 3_000;
    int idle = args.length > 4 ? Integer.parseInt(args[4]) : 20_000;
    int slow = args.length > 5 ? Integer.parseInt(args[5]) : 500;
    int mport = Integer.getInteger("managementPort", port);
    System.out.println("start: rss " + rssMb(pid) + " MB, /metrics " + metricsLines(mport) + " lines; probes and "
        + "scrapes on port " + mport + (mport == port ? " (the API port)" : " (management), API port " + port));
    try (Prober prober = new Prober(mport, 100); Prober apiProber = mport == port ? null : new Prober(port, 100)) {
      int answered = methodFlood(port, methods, "M");
      System.out.println("methods: " + answered + " of " + methods + " distinct unknown methods answered; /metrics "
          + metricsLines(mport) + " lines; rss " + rssMb(pid) + " MB; live " + prober.summary());
      try (Swarm s = new Swarm(port, List.of(), partialBody(), 0)) {
        long start = System.nanoTime();
        s.connect(partial, 15_000, 30_000, PARTIAL_PER_SECOND);
        long sent = (System.nanoTime() - start) / 1_000_000;
        long rssSent = rssMb(pid);
        long until = System.nanoTime() + 15_000_000_000L;
        while (s.open > 0 && System.nanoTime() < until) {
          s.pump(50);
        }
        System.out.println("partial bodies: " + partial + " connected in " + sent + " ms (rss then " + rssSent + " MB), "
            + s.closedByServer + " closed by the server after " + (System.nanoTime() - start) / 1_000_000 + " ms, "
            + s.open + " still open; rss " + rssMb(pid) + " MB; live " + prober.summary());
      }
      try (Swarm s = new Swarm(port, List.of(), SLOW_HEADER, 1_000)) {
        s.connect(slow, 15_000, 10_000);
        s.pump(12_000);
        System.out.println("slow headers: " + slow + " opened, " + s.closedByServer + " closed by the server within 12 s"
            + " (longest lived " + s.longestLife() + " ms); rss " + rssMb(pid) + " MB; live " + prober.summary());
      }
      try (Swarm s = new Swarm(port, SOURCES, "", 0)) {
        long start = System.nanoTime();
        s.connect(idle, 15_000, 60_000, IDLE_PER_SECOND);
        System.out.println("idle: connected in " + (System.nanoTime() - start) / 1_000_000 + " ms");
        s.pump(1_000);
        System.out.println("idle: " + idle + " attempted, at most " + s.maxOpen + " open at once here, " + s.open
            + " open at the end (the server counts " + serverConnections(mport) + "), " + s.closedByServer + " closed by the server, " + s.connectFailures
            + " failed to connect; rss " + rssMb(pid) + " MB; live " + prober.summary());
      }
      System.out.println("end: alive " + ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false) + ", rss "
          + rssMb(pid) + " MB, /metrics " + metricsLines(mport) + " lines, live " + prober.summary()
          + (apiProber == null ? "" : "; on the API port: " + apiProber.summary()));
    }
  }
}
