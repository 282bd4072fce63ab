package io.retrybudget.bench.relay;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import javax.imageio.ImageIO;

/**
 * The relay tier's cost curve (bench/README.md, "Relay tier"): Redis's script calls a second for the
 * budget (healthy mean, and the most in one second) and how far its count lags (median, max) against
 * the fleet's size, clients calling Redis directly against clients through relays, from the
 * virtual-time runs' per-second files, with the real-process run's points beside them. A PNG drawn
 * with java.awt (headless), in the style of the other bench charts. Arguments: {@code <results dir>
 * <virtual runs' names, comma-separated> <real runs' names, comma-separated> <out.png>}, e.g. {@code bench/results/relay
 * relay27,relay27-1m,relay27-1m-direct relay27-real bench/results/relay/relay27-cost-curve.png}: every
 * {@code <name>-<clients>-<direct|relay>.csv} of the virtual runs is a point (each point measured: a
 * size not run has no point); a real run's file that is missing leaves its point out.
 */
public final class CostCurveChart {
  private static final Color DIRECT = new Color(0xd62728);
  private static final Color RELAY = new Color(0x1f77b4);

  /** One design at one fleet size: calls a second (healthy mean, most in a second), lag s (median, max). */
  record Point(int clients, double calls, double callsMax, double lagMedian, double lagMax) {}

  private CostCurveChart() {}

  public static void main(String[] args) throws IOException {
    Path dir = Path.of(args[0]);
    List<Point> direct = new ArrayList<>();
    List<Point> relay = new ArrayList<>();
    for (String name : args[1].split(",")) {
      java.util.regex.Pattern file = java.util.regex.Pattern.compile(
          java.util.regex.Pattern.quote(name) + "-([0-9]+)-(direct|relay)\\.csv");
      try (java.util.stream.Stream<Path> files = Files.list(dir)) {
        for (Path f : files.sorted().toList()) {
          java.util.regex.Matcher m = file.matcher(f.getFileName().toString());
          if (m.matches()) {
            add(m.group(2).equals("direct") ? direct : relay, Integer.parseInt(m.group(1)), f, 5, 0);
          }
        }
      }
    }
    direct.sort(java.util.Comparator.comparingInt(Point::clients));
    relay.sort(java.util.Comparator.comparingInt(Point::clients));
    List<Point> realDirect = new ArrayList<>();
    List<Point> realRelay = new ArrayList<>();
    for (String real : args[2].split(",")) {
      Path summary = dir.resolve(real + "-summary.md");
      int realClients = realClients(summary);
      add(realDirect, realClients, dir.resolve(real + "-direct.csv"), 10, neverCountedSeconds(summary, "direct"));
      add(realRelay, realClients, dir.resolve(real + "-relay.csv"), 10, neverCountedSeconds(summary, "relays"));
    }
    write(Path.of(args[3]), direct, relay, realDirect, realRelay);
  }

  /**
   * The point of a per-second file (columns redis_calls and lag_s), its first {@code healthy} seconds
   * healthy; each second's lag less {@code neverCounted} seconds (first attempts Redis never counted,
   * which stay in every later second's lag: the point is the delay).
   */
  private static void add(List<Point> into, int clients, Path csv, int healthy, double neverCounted) throws IOException {
    if (clients <= 0 || !Files.isRegularFile(csv)) {
      return;
    }
    List<String> lines = Files.readAllLines(csv);
    List<String> header = Arrays.asList(lines.get(0).split(","));
    int callsAt = header.indexOf("redis_calls");
    int lagAt = header.indexOf("lag_s");
    double[] calls = new double[lines.size() - 1];
    double[] lags = new double[lines.size() - 1];
    for (int i = 1; i < lines.size(); i++) {
      String[] f = lines.get(i).split(",");
      calls[i - 1] = Double.parseDouble(f[callsAt]);
      lags[i - 1] = Math.max(0, Double.parseDouble(f[lagAt]) - neverCounted);
    }
    double[] sorted = lags.clone();
    Arrays.sort(sorted);
    into.add(new Point(clients, Arrays.stream(calls, 0, Math.min(healthy, calls.length)).average().orElse(0),
        Arrays.stream(calls).max().orElse(0), sorted[sorted.length / 2], sorted[sorted.length - 1]));
  }

  /**
   * The first attempts Redis never counted in a real run's design, as seconds of the fleet's rate, from
   * its summary's cost row ("| direct | ... | 429 (of 4,399,825; 0.01 s) |", the row's label starting
   * with {@code design} or ending with it: "4 relays"); 0 when the summary has none (older runs).
   */
  static double neverCountedSeconds(Path summary, String design) throws IOException {
    if (!Files.isRegularFile(summary)) {
      return 0;
    }
    java.util.regex.Pattern cell = java.util.regex.Pattern.compile("\\(of [0-9,]+; ([0-9.]+) s\\) \\|\\s*$");
    for (String line : Files.readAllLines(summary)) {
      String[] cells = line.split("\\|");
      if (cells.length > 1 && cells[1].trim().endsWith(design)) {
        java.util.regex.Matcher m = cell.matcher(line);
        if (m.find()) {
          return Double.parseDouble(m.group(1));
        }
      }
    }
    return 0;
  }

  /** The clients of the real run, from its summary's title ("...: 20,000 clients in ..."); 0 when there is none. */
  private static int realClients(Path summary) throws IOException {
    if (!Files.isRegularFile(summary)) {
      return 0;
    }
    String first = Files.readAllLines(summary).get(0);
    java.util.regex.Matcher m = java.util.regex.Pattern.compile(": ([0-9,]+) clients").matcher(first);
    return m.find() ? Integer.parseInt(m.group(1).replace(",", "")) : 0;
  }

  private static final int W = 1200;
  private static final int H = 560;
  private static final int TOP = 70;
  private static final int BOTTOM = 110;
  private static final int PANEL_W = 470;
  private static final int[] PANEL_LEFT = {90, 680};

  static void write(Path file, List<Point> direct, List<Point> relay, List<Point> realDirect, List<Point> realRelay)
      throws IOException {
    BufferedImage img = new BufferedImage(W, H, BufferedImage.TYPE_INT_RGB);
    Graphics2D g = img.createGraphics();
    try {
      g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
      g.setRenderingHint(RenderingHints.KEY_TEXT_ANTIALIASING, RenderingHints.VALUE_TEXT_ANTIALIAS_ON);
      g.setColor(Color.WHITE);
      g.fillRect(0, 0, W, H);
      g.setColor(Color.BLACK);
      g.setFont(new Font(Font.SANS_SERIF, Font.BOLD, 18));
      g.drawString("One budget's Redis cost and count lag against fleet size: direct calls against relays", 90, 32);
      int ph = H - TOP - BOTTOM;
      // left: script calls a second, log scale 1 .. 1,000,000 (direct calls at 10^6 clients: about 100,000)
      Panel calls = new Panel(PANEL_LEFT[0], ph, 0, 6, true);
      calls.axes(g, "Redis script calls/s for the budget (log)");
      calls.dashed(g, 2_000, new Color(0x555555), "max_calls_per_s 2,000");
      calls.line(g, direct, Point::calls, DIRECT, false);
      calls.line(g, direct, Point::callsMax, DIRECT, true);
      calls.line(g, relay, Point::calls, RELAY, false);
      calls.line(g, relay, Point::callsMax, RELAY, true);
      calls.marks(g, realDirect, Point::calls, DIRECT);
      calls.marks(g, realRelay, Point::calls, RELAY);
      // right: lag, seconds, 0 .. 6
      Panel lag = new Panel(PANEL_LEFT[1], ph, 0, 6, false);
      lag.axes(g, "Redis's count lag, s");
      lag.dashed(g, 1, new Color(0x555555), "target: 1 s");
      lag.line(g, direct, Point::lagMedian, DIRECT, false);
      lag.line(g, direct, Point::lagMax, DIRECT, true);
      lag.line(g, relay, Point::lagMedian, RELAY, false);
      lag.line(g, relay, Point::lagMax, RELAY, true);
      lag.marks(g, realDirect, Point::lagMax, DIRECT);
      lag.marks(g, realRelay, Point::lagMax, RELAY);
      legend(g, H - 62);
    } finally {
      g.dispose();
    }
    ImageIO.write(img, "png", file.toFile());
  }

  private static void legend(Graphics2D g, int y) {
    g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 13));
    int x = 90;
    Object[][] items = {{DIRECT, false, "direct to Redis (the design before)"}, {RELAY, false, "through relays"},
        {Color.DARK_GRAY, false, "solid: healthy mean (calls) / median (lag)"},
        {Color.DARK_GRAY, true, "dashed: most in one second / max"}};
    for (Object[] it : items) {
      g.setColor((Color) it[0]);
      g.setStroke((Boolean) it[1] ? dash() : new BasicStroke(2.5f));
      g.drawLine(x, y, x + 28, y);
      g.setColor(Color.BLACK);
      g.drawString((String) it[2], x + 36, y + 5);
      x += 50 + g.getFontMetrics().stringWidth((String) it[2]);
    }
    g.setStroke(new BasicStroke(1.5f));
    g.drawOval(90, y + 18, 10, 10);
    g.drawString("circles: real processes on 2 cores, 2,000 / 6,000 / 20,000 clients (lag: max, less the first "
        + "attempts Redis never counted); dots: virtual time", 108, y + 28);
  }

  private static BasicStroke dash() {
    return new BasicStroke(1.6f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_MITER, 10, new float[] {7, 5}, 0);
  }

  /** One plot: x is log10 of the clients from 10^3 to 10^6; y linear or log10. */
  private record Panel(int left, int ph, double yMin, double yMax, boolean logY) {
    int x(double clients) {
      return left + (int) Math.round(PANEL_W * (Math.log10(clients) - 3) / 3.0);
    }

    int y(double v) {
      double f = logY ? (v <= 1 ? 0 : Math.log10(v) / yMax) : (v - yMin) / (yMax - yMin);
      return TOP + ph - (int) Math.round(ph * Math.min(1, Math.max(0, f)));
    }

    void axes(Graphics2D g, String title) {
      g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 13));
      g.setStroke(new BasicStroke(1f));
      int ticks = logY ? (int) yMax : 6;
      for (int k = 0; k <= ticks; k++) {
        double v = logY ? Math.pow(10, k) : yMin + (yMax - yMin) * k / ticks;
        int yy = y(v);
        g.setColor(new Color(0xdddddd));
        g.drawLine(left, yy, left + PANEL_W, yy);
        g.setColor(Color.BLACK);
        String label = logY ? String.format("%,.0f", v) : String.format("%.1f", v);
        g.drawString(label, left - 10 - g.getFontMetrics().stringWidth(label), yy + 5);
      }
      for (int e = 3; e <= 6; e++) {
        int xx = x(Math.pow(10, e));
        g.setColor(new Color(0xeeeeee));
        g.drawLine(xx, TOP, xx, TOP + ph);
        g.setColor(Color.BLACK);
        String label = String.format("%,d", (long) Math.pow(10, e));
        g.drawString(label, xx - g.getFontMetrics().stringWidth(label) / 2, TOP + ph + 20);
      }
      g.setColor(Color.BLACK);
      g.drawLine(left, TOP + ph, left + PANEL_W, TOP + ph);
      g.drawLine(left, TOP, left, TOP + ph);
      g.setFont(new Font(Font.SANS_SERIF, Font.BOLD, 14));
      g.drawString(title, left, TOP - 12);
      g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 13));
      g.drawString("clients of the budget (log)", left + PANEL_W / 2 - 70, TOP + ph + 40);
    }

    void dashed(Graphics2D g, double v, Color c, String label) {
      g.setColor(c);
      g.setStroke(dash());
      g.drawLine(left, y(v), left + PANEL_W, y(v));
      g.drawString(label, left + 6, y(v) - 5);
    }

    void line(Graphics2D g, List<Point> points, java.util.function.ToDoubleFunction<Point> value, Color c, boolean dashed) {
      g.setColor(c);
      g.setStroke(dashed ? dash() : new BasicStroke(2.5f));
      for (int i = 0; i < points.size(); i++) {
        Point p = points.get(i);
        int xx = x(p.clients());
        int yy = y(value.applyAsDouble(p));
        if (!dashed) {
          g.fillOval(xx - 4, yy - 4, 8, 8);
        }
        if (i > 0) {
          Point q = points.get(i - 1);
          g.drawLine(x(q.clients()), y(value.applyAsDouble(q)), xx, yy);
        }
      }
    }

    void marks(Graphics2D g, List<Point> points, java.util.function.ToDoubleFunction<Point> value, Color c) {
      g.setColor(c);
      g.setStroke(new BasicStroke(2.5f));
      int off = 0; // off-scale labels of one series, one under the other (neighbouring sizes overlapped)
      for (Point p : points) {
        double v = value.applyAsDouble(p);
        g.drawOval(x(p.clients()) - 8, y(v) - 8, 16, 16);
        if (!logY && v > yMax) {
          g.drawString(String.format("%.1f s, off the scale", v), x(p.clients()) + 12,
              y(v) + 5 + (c.equals(RELAY) ? 18 : 0) + 36 * off++);
        }
      }
    }
  }
}
