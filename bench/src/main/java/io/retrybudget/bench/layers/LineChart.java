package io.retrybudget.bench.layers;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import javax.imageio.ImageIO;

/**
 * A PNG line chart (java.awt, headless): one line per series over x = 0..n-1, optionally with an
 * x range shaded (an outage, a trigger). Used by the layers and metastable benchmarks.
 */
public final class LineChart {
  private static final Color[] COLORS = {new Color(0xd62728), new Color(0x1f77b4), new Color(0x2ca02c),
      new Color(0x9467bd), new Color(0xff7f0e), new Color(0x8c564b), new Color(0x17becf)};

  /** One line: its legend and its value at each x. */
  public record Series(String name, double[] values) {}

  private LineChart() {}

  /** A chart without a shaded range. */
  public static void write(Path file, String title, String xLabel, String yLabel, List<Series> series, boolean logY)
      throws IOException {
    write(file, title, xLabel, yLabel, series, logY, -1, -1);
  }

  /** A chart with x in [bandFrom, bandTo) shaded (nothing shaded when bandFrom is negative). */
  public static void write(Path file, String title, String xLabel, String yLabel, List<Series> series, boolean logY,
      int bandFrom, int bandTo) throws IOException {
    int w = 1100;
    int h = 600;
    int left = 90;
    int right = 30;
    int top = 60;
    int bottom = 70;
    BufferedImage img = new BufferedImage(w, h, BufferedImage.TYPE_INT_RGB);
    Graphics2D g = img.createGraphics();
    g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
    g.setColor(Color.WHITE);
    g.fillRect(0, 0, w, h);
    int n = series.stream().mapToInt(s -> s.values().length).max().orElse(1);
    double max = series.stream().flatMapToDouble(s -> java.util.Arrays.stream(s.values())).max().orElse(1);
    double yMax = logY ? Math.pow(10, Math.ceil(Math.log10(Math.max(10, max)))) : niceMax(max);
    int pw = w - left - right;
    int ph = h - top - bottom;
    if (bandFrom >= 0 && bandTo > bandFrom) {
      int bx0 = left + (int) ((long) pw * bandFrom / Math.max(1, n - 1));
      int bx1 = left + (int) ((long) pw * Math.min(bandTo, n - 1) / Math.max(1, n - 1));
      g.setColor(new Color(255, 228, 228));
      g.fillRect(bx0, top, Math.max(1, bx1 - bx0), ph);
    }
    g.setColor(Color.BLACK);
    g.setFont(new Font(Font.SANS_SERIF, Font.BOLD, 18));
    g.drawString(title, left, 35);
    g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 13));
    g.drawLine(left, top + ph, left + pw, top + ph);
    g.drawLine(left, top, left, top + ph);
    g.drawString(xLabel, left + pw / 2 - 40, h - 20);
    g.drawString(yLabel, 10, top - 10);
    // y ticks
    if (logY) {
      for (double v = 1; v <= yMax; v *= 10) {
        int y = yOf(v, yMax, ph, top, true);
        g.setColor(new Color(0xdddddd));
        g.drawLine(left + 1, y, left + pw, y);
        g.setColor(Color.BLACK);
        g.drawString(String.format("%,.0f", v), 20, y + 5);
      }
    } else {
      for (int i = 0; i <= 5; i++) {
        double v = yMax * i / 5;
        int y = yOf(v, yMax, ph, top, false);
        g.setColor(new Color(0xdddddd));
        g.drawLine(left + 1, y, left + pw, y);
        g.setColor(Color.BLACK);
        g.drawString(String.format("%,.0f", v), 20, y + 5);
      }
    }
    for (int i = 0; i < n; i += Math.max(1, n / 10)) {
      int x = left + (int) ((long) pw * i / Math.max(1, n - 1));
      g.drawString(Integer.toString(i), x - 5, top + ph + 20);
    }
    g.setStroke(new BasicStroke(2.2f));
    for (int s = 0; s < series.size(); s++) {
      double[] v = series.get(s).values();
      g.setColor(COLORS[s % COLORS.length]);
      for (int i = 1; i < v.length; i++) {
        int x0 = left + (int) ((long) pw * (i - 1) / Math.max(1, n - 1));
        int x1 = left + (int) ((long) pw * i / Math.max(1, n - 1));
        g.drawLine(x0, yOf(v[i - 1], yMax, ph, top, logY), x1, yOf(v[i], yMax, ph, top, logY));
      }
      g.fillRect(left + pw - 260, top + 10 + 22 * s, 18, 10);
      g.setColor(Color.BLACK);
      g.drawString(series.get(s).name(), left + pw - 235, top + 20 + 22 * s);
    }
    g.dispose();
    ImageIO.write(img, "png", file.toFile());
  }

  private static int yOf(double v, double yMax, int ph, int top, boolean log) {
    double f = log ? (v <= 1 ? 0 : Math.log10(v) / Math.log10(yMax)) : v / yMax;
    return top + ph - (int) Math.round(ph * Math.min(1, Math.max(0, f)));
  }

  private static double niceMax(double max) {
    if (max <= 0) {
      return 1;
    }
    double p = Math.pow(10, Math.floor(Math.log10(max)));
    for (double m : new double[] {1, 2, 2.5, 5, 10}) {
      if (m * p >= max) {
        return m * p;
      }
    }
    return 10 * p;
  }
}
