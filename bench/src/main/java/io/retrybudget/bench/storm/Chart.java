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

/** Offered load (attempts per second) over time, one line per strategy, drawn with java.awt. */
final class Chart {
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
}
