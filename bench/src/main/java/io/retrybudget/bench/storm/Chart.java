package io.retrybudget.bench.storm;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.FontMetrics;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.geom.Path2D;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import javax.imageio.ImageIO;

/**
 * Offered load (attempts per second) over time, one line per strategy; and, for two designs side
 * by side, retries per second and the per-second retry ratio. Drawn with java.awt (headless).
 */
final class Chart {
  static final Color OLD_COLOR = new Color(0xD62728);
  static final Color NEW_COLOR = new Color(0x1F77B4);

  /** One design's fleet run: first attempts and retries sent per second. */
  record Line(String label, Color color, long[] first, long[] retries) {}

  private static final int W = 1200;
  private static final int H = 650;
  private static final int LEFT = 90;
  private static final int RIGHT = 30;
  private static final int TOP = 70;
  private static final int BOTTOM = 70;

  private Chart() {}

  static void write(Path file, String title, List<StormRun> runs, int outageFrom, int outageTo, double firstRate)
      throws IOException {
    BufferedImage img = new BufferedImage(W, H, BufferedImage.TYPE_INT_RGB);
    Graphics2D g = img.createGraphics();
    try {
      g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
      g.setRenderingHint(RenderingHints.KEY_TEXT_ANTIALIASING, RenderingHints.VALUE_TEXT_ANTIALIAS_ON);
      g.setColor(Color.WHITE);
      g.fillRect(0, 0, W, H);

      int seconds = runs.get(0).seconds();
      long max = (long) firstRate;
      for (StormRun r : runs) {
        for (int s = 0; s < seconds; s++) {
          max = Math.max(max, r.first(s) + r.retries(s));
        }
      }
      double yStep = niceStep(max * 1.1 / 6);
      double yMax = Math.ceil(max * 1.1 / yStep) * yStep;
      int plotW = W - LEFT - RIGHT;
      int plotH = H - TOP - BOTTOM;

      // outage band
      g.setColor(new Color(255, 228, 228));
      int ox0 = x(outageFrom, seconds, plotW);
      int ox1 = x(outageTo, seconds, plotW);
      g.fillRect(ox0, TOP, ox1 - ox0, plotH);

      // grid and axes
      Font small = new Font(Font.SANS_SERIF, Font.PLAIN, 13);
      g.setFont(small);
      FontMetrics fm = g.getFontMetrics();
      for (double v = 0; v <= yMax + 1e-9; v += yStep) {
        int y = y(v, yMax, plotH);
        g.setColor(new Color(225, 225, 225));
        g.drawLine(LEFT, y, LEFT + plotW, y);
        g.setColor(Color.DARK_GRAY);
        String label = String.format("%,d", (long) v);
        g.drawString(label, LEFT - 8 - fm.stringWidth(label), y + fm.getAscent() / 2 - 1);
      }
      int xStep = seconds <= 20 ? 2 : seconds <= 60 ? 5 : 10;
      for (int s = 0; s <= seconds; s += xStep) {
        int xx = x(s, seconds, plotW);
        g.setColor(new Color(235, 235, 235));
        g.drawLine(xx, TOP, xx, TOP + plotH);
        g.setColor(Color.DARK_GRAY);
        String label = Integer.toString(s);
        g.drawString(label, xx - fm.stringWidth(label) / 2, TOP + plotH + fm.getAscent() + 6);
      }
      g.setColor(Color.BLACK);
      g.drawRect(LEFT, TOP, plotW, plotH);
      g.drawString("time (s)", LEFT + plotW / 2 - fm.stringWidth("time (s)") / 2, H - 22);
      Graphics2D gr = (Graphics2D) g.create();
      gr.rotate(-Math.PI / 2);
      String yl = "attempts sent per second (first attempts + retries)";
      gr.drawString(yl, -(TOP + plotH / 2) - fm.stringWidth(yl) / 2, 22);
      gr.dispose();

      g.setColor(new Color(190, 60, 60));
      g.drawString("backend fails 100%", ox0 + 6, TOP + 18);

      // first attempts only (the same for every strategy): dashed
      g.setColor(Color.GRAY);
      g.setStroke(new BasicStroke(1.5f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_MITER, 10f, new float[] {6f, 5f}, 0f));
      int fy = y(firstRate, yMax, plotH);
      g.drawLine(LEFT, fy, LEFT + plotW, fy);

      g.setStroke(new BasicStroke(2.4f, BasicStroke.CAP_ROUND, BasicStroke.JOIN_ROUND));
      for (StormRun r : runs) {
        Path2D.Double path = new Path2D.Double();
        for (int s = 0; s < seconds; s++) {
          double xx = x(s + 0.5, seconds, plotW);
          double yy = y(r.first(s) + r.retries(s), yMax, plotH);
          if (s == 0) {
            path.moveTo(xx, yy);
          } else {
            path.lineTo(xx, yy);
          }
        }
        g.setColor(r.strategy().color);
        g.draw(path);
      }

      // legend
      int lx = LEFT + plotW - 330;
      int ly = TOP + 14;
      g.setColor(new Color(255, 255, 255, 235));
      g.fillRect(lx - 10, ly - 6, 330, 24 * (runs.size() + 1) + 8);
      g.setColor(Color.LIGHT_GRAY);
      g.drawRect(lx - 10, ly - 6, 330, 24 * (runs.size() + 1) + 8);
      int row = 0;
      for (StormRun r : runs) {
        int yy = ly + 24 * row++;
        g.setColor(r.strategy().color);
        g.setStroke(new BasicStroke(3f));
        g.drawLine(lx, yy + 8, lx + 30, yy + 8);
        g.setColor(Color.BLACK);
        g.drawString(r.strategy().label, lx + 40, yy + 13);
      }
      int yy = ly + 24 * row;
      g.setColor(Color.GRAY);
      g.setStroke(new BasicStroke(1.5f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_MITER, 10f, new float[] {6f, 5f}, 0f));
      g.drawLine(lx, yy + 8, lx + 30, yy + 8);
      g.setColor(Color.BLACK);
      g.drawString("first attempts alone", lx + 40, yy + 13);

      g.setFont(new Font(Font.SANS_SERIF, Font.BOLD, 17));
      g.drawString(title, LEFT, 38);
    } finally {
      g.dispose();
    }
    ImageIO.write(img, "png", file.toFile());
  }

  private static int x(double second, int seconds, int plotW) {
    return LEFT + (int) Math.round(second * plotW / seconds);
  }

  private static int y(double v, double yMax, int plotH) {
    return TOP + plotH - (int) Math.round(v * plotH / yMax);
  }

  private static double niceStep(double raw) {
    double mag = Math.pow(10, Math.floor(Math.log10(Math.max(raw, 1))));
    for (double m : new double[] {1, 2, 2.5, 5, 10}) {
      if (raw <= m * mag) {
        return m * mag;
      }
    }
    return 10 * mag;
  }

  private static final int CW = 1200;
  private static final int PANEL_H = 380;
  private static final int CH = TOP + 2 * PANEL_H + 2 * BOTTOM + 30;

  /**
   * Two panels over time: retries sent per second (with {@code ratio x first attempts} of that
   * second dashed), and the per-second ratio retries / first attempts with the paced band [0.03,
   * 0.25] shaded; one line per design, the outage shaded red.
   */
  static void writeCompare(Path file, String title, List<Line> lines, int outageFrom, int outageTo, double ratio) throws IOException {
    BufferedImage img = new BufferedImage(CW, CH, BufferedImage.TYPE_INT_RGB);
    Graphics2D g = img.createGraphics();
    try {
      g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
      g.setRenderingHint(RenderingHints.KEY_TEXT_ANTIALIASING, RenderingHints.VALUE_TEXT_ANTIALIAS_ON);
      g.setColor(Color.WHITE);
      g.fillRect(0, 0, CW, CH);
      int seconds = lines.get(0).first().length;
      for (Line l : lines) {
        seconds = Math.min(seconds, l.first().length);
      }
      // panel 1: retries per second
      double[][] retries = new double[lines.size()][seconds];
      double[] target = new double[seconds];
      double max = 1;
      for (int i = 0; i < lines.size(); i++) {
        for (int s = 0; s < seconds; s++) {
          retries[i][s] = lines.get(i).retries()[s];
          max = Math.max(max, retries[i][s]);
        }
      }
      for (int s = 0; s < seconds; s++) {
        target[s] = ratio * lines.get(0).first()[s];
      }
      int top1 = TOP;
      panel(g, top1, seconds, outageFrom, outageTo, max, "retries sent per second", lines, retries, target,
          String.format(java.util.Locale.ROOT, "%.2f x first attempts of the second", ratio), Double.NaN, Double.NaN);
      // panel 2: per-second ratio
      double[][] ratios = new double[lines.size()][seconds];
      double rmax = StormStats.BAND_HIGH + 0.05;
      for (int i = 0; i < lines.size(); i++) {
        for (int s = 0; s < seconds; s++) {
          long f = lines.get(i).first()[s];
          ratios[i][s] = f == 0 ? 0 : (double) lines.get(i).retries()[s] / f;
          rmax = Math.max(rmax, ratios[i][s]);
        }
      }
      double[] flat = new double[seconds];
      java.util.Arrays.fill(flat, ratio);
      int top2 = TOP + PANEL_H + BOTTOM + 30;
      panel(g, top2, seconds, outageFrom, outageTo, rmax, "retries / first attempts, per second", lines, ratios, flat,
          String.format(java.util.Locale.ROOT, "ratio %.2f", ratio), StormStats.BAND_LOW, StormStats.BAND_HIGH);
      g.setColor(Color.BLACK);
      g.setFont(new Font(Font.SANS_SERIF, Font.BOLD, 16));
      g.drawString(title, LEFT, 38);
    } finally {
      g.dispose();
    }
    ImageIO.write(img, "png", file.toFile());
  }

  private static void panel(Graphics2D g, int top, int seconds, int outageFrom, int outageTo, double max, String yLabel,
      List<Line> lines, double[][] values, double[] reference, String referenceLabel, double bandLow, double bandHigh) {
    boolean fractions = max < 10;
    double yStep = fractions ? niceFraction(max * 1.1 / 6) : niceStep(max * 1.1 / 6);
    double yMax = Math.ceil(max * 1.1 / yStep) * yStep;
    int plotW = CW - LEFT - RIGHT;
    int plotH = PANEL_H;
    g.setColor(new Color(255, 228, 228));
    int ox0 = x(outageFrom, seconds, plotW);
    int ox1 = x(outageTo, seconds, plotW);
    g.fillRect(ox0, top, ox1 - ox0, plotH);
    if (!Double.isNaN(bandLow)) {
      g.setColor(new Color(200, 235, 200, 170));
      int yb0 = top + plotH - (int) Math.round(bandHigh * plotH / yMax);
      int yb1 = top + plotH - (int) Math.round(bandLow * plotH / yMax);
      g.fillRect(ox0, yb0, ox1 - ox0, yb1 - yb0);
    }
    Font small = new Font(Font.SANS_SERIF, Font.PLAIN, 13);
    g.setFont(small);
    FontMetrics fm = g.getFontMetrics();
    g.setStroke(new BasicStroke(1f));
    for (double v = 0; v <= yMax + 1e-9; v += yStep) {
      int yy = top + plotH - (int) Math.round(v * plotH / yMax);
      g.setColor(new Color(225, 225, 225));
      g.drawLine(LEFT, yy, LEFT + plotW, yy);
      g.setColor(Color.DARK_GRAY);
      String label = fractions ? String.format(java.util.Locale.ROOT, "%.2f", v) : String.format("%,d", (long) v);
      g.drawString(label, LEFT - 8 - fm.stringWidth(label), yy + fm.getAscent() / 2 - 1);
    }
    int xStep = seconds <= 20 ? 2 : seconds <= 60 ? 5 : 10;
    for (int s = 0; s <= seconds; s += xStep) {
      int xx = x(s, seconds, plotW);
      g.setColor(Color.DARK_GRAY);
      String label = Integer.toString(s);
      g.drawString(label, xx - fm.stringWidth(label) / 2, top + plotH + fm.getAscent() + 6);
    }
    g.setColor(Color.BLACK);
    g.drawRect(LEFT, top, plotW, plotH);
    g.drawString("time (s)", LEFT + plotW / 2 - fm.stringWidth("time (s)") / 2, top + plotH + 38);
    Graphics2D gr = (Graphics2D) g.create();
    gr.rotate(-Math.PI / 2);
    gr.drawString(yLabel, -(top + plotH / 2) - fm.stringWidth(yLabel) / 2, 22);
    gr.dispose();
    g.setColor(new Color(190, 60, 60));
    g.drawString("backend fails 100%" + (Double.isNaN(bandLow) ? ""
        : String.format(java.util.Locale.ROOT, " (green: target [%.2f, %.2f])", bandLow, bandHigh)), ox0 + 6, top + 18);
    // reference: dashed grey
    g.setColor(Color.GRAY);
    g.setStroke(new BasicStroke(1.5f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_MITER, 10f, new float[] {6f, 5f}, 0f));
    g.draw(path(reference, seconds, plotW, top, plotH, yMax));
    g.setStroke(new BasicStroke(2.2f, BasicStroke.CAP_ROUND, BasicStroke.JOIN_ROUND));
    for (int i = 0; i < lines.size(); i++) {
      g.setColor(lines.get(i).color());
      g.draw(path(values[i], seconds, plotW, top, plotH, yMax));
    }
    // legend
    int lw = 420;
    int lx = LEFT + plotW - lw - 4;
    int ly = top + 10;
    g.setColor(new Color(255, 255, 255, 235));
    g.fillRect(lx - 10, ly - 6, lw, 24 * (lines.size() + 1) + 8);
    g.setColor(Color.LIGHT_GRAY);
    g.setStroke(new BasicStroke(1f));
    g.drawRect(lx - 10, ly - 6, lw, 24 * (lines.size() + 1) + 8);
    int row = 0;
    for (Line l : lines) {
      int yy = ly + 24 * row++;
      g.setColor(l.color());
      g.setStroke(new BasicStroke(3f));
      g.drawLine(lx, yy + 8, lx + 30, yy + 8);
      g.setColor(Color.BLACK);
      g.drawString(l.label(), lx + 40, yy + 13);
    }
    int yy = ly + 24 * row;
    g.setColor(Color.GRAY);
    g.setStroke(new BasicStroke(1.5f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_MITER, 10f, new float[] {6f, 5f}, 0f));
    g.drawLine(lx, yy + 8, lx + 30, yy + 8);
    g.setColor(Color.BLACK);
    g.drawString(referenceLabel, lx + 40, yy + 13);
  }

  private static Path2D.Double path(double[] v, int seconds, int plotW, int top, int plotH, double yMax) {
    Path2D.Double path = new Path2D.Double();
    for (int s = 0; s < seconds; s++) {
      double xx = x(s + 0.5, seconds, plotW);
      double yy = top + plotH - v[s] * plotH / yMax;
      if (s == 0) {
        path.moveTo(xx, yy);
      } else {
        path.lineTo(xx, yy);
      }
    }
    return path;
  }

  private static double niceFraction(double raw) {
    for (double m : new double[] {0.01, 0.02, 0.025, 0.05, 0.1, 0.2, 0.25, 0.5, 1, 2}) {
      if (raw <= m) {
        return m;
      }
    }
    return 5;
  }
}
