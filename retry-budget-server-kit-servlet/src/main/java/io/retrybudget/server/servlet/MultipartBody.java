package io.retrybudget.server.servlet;

import io.retrybudget.server.RequestView;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.Part;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;

/**
 * A {@code multipart/form-data} body for the fingerprint, parsed by the container itself ({@code
 * getParts()}, under the servlet's multipart configuration): the servlet then reads the same parts
 * and the form fields among them as parameters, as without the filter. The fingerprint covers each
 * part's name, file name, content type and bytes, in order; not the boundary, which a client may
 * choose anew on every retry of the same form.
 */
final class MultipartBody {
  private MultipartBody() {}

  /** What reading the parts gave. */
  sealed interface Result {}

  /** The parts' canonical encoding, for the fingerprint. */
  record Parsed(byte[] canonical) implements Result {}

  /** Larger than the filter's bound: answer 413. */
  record TooLarge() implements Result {}

  /** Not parsed by the container (not multipart, or the servlet has no multipart configuration): read the raw body. */
  record ReadRaw() implements Result {}

  /** The container refused the body: malformed (400) or over its multipart limits (413). */
  record Refused(int status, String detail) implements Result {}

  static boolean isMultipart(String contentType) {
    return contentType != null && CachedBodyRequest.baseType(contentType).equals("multipart/form-data");
  }

  /**
   * Parses the parts (the container enforces its own multipart limits as it reads; a declared
   * length over {@code max} is refused before anything is read) and encodes them.
   */
  static Result read(HttpServletRequest req, int max) throws IOException {
    if (req.getContentLengthLong() > max) {
      return new TooLarge();
    }
    java.util.Collection<Part> parts;
    try {
      parts = req.getParts();
    } catch (IllegalStateException e) {
      // no multipart configuration on the servlet (Jetty and Tomcat say so before reading), or
      // the container's size limits were passed
      if (e.getCause() == null && noConfiguration(e)) {
        return new ReadRaw();
      }
      return refused(e);
    } catch (ServletException | RuntimeException e) {
      return refused(e);
    }
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    long total = 0;
    for (Part p : parts) {
      field(out, p.getName());
      field(out, p.getSubmittedFileName());
      field(out, p.getContentType());
      total += p.getSize();
      if (total > max) {
        return new TooLarge();
      }
      try (InputStream in = p.getInputStream()) {
        byte[] bytes = in.readAllBytes();
        length(out, bytes.length);
        out.write(bytes);
      }
    }
    return new Parsed(out.toByteArray());
  }

  private static Refused refused(Exception e) {
    StringBuilder what = new StringBuilder();
    for (Throwable t = e; t != null && what.length() < 300; t = t.getCause()) {
      what.append(t.getClass().getSimpleName()).append(": ").append(t.getMessage()).append("; ");
    }
    String text = what.toString().toLowerCase(java.util.Locale.ROOT);
    boolean size = text.contains("size") || text.contains("exceed") || text.contains("too large");
    return new Refused(size ? 413 : 400, size ? "the multipart body exceeds the servlet's multipart limits"
        : "the multipart body could not be parsed");
  }

  /** The view with the media type alone as its Content-Type: the boundary is no part of the fingerprint. */
  static RequestView withoutBoundary(RequestView view) {
    return new RequestView() {
      @Override
      public String method() {
        return view.method();
      }

      @Override
      public String route() {
        return view.route();
      }

      @Override
      public String target() {
        return view.target();
      }

      @Override
      public String header(String name) {
        return name.equalsIgnoreCase("content-type") ? "multipart/form-data" : view.header(name);
      }

      @Override
      public java.util.List<String> headers(String name, int max) {
        return name.equalsIgnoreCase("content-type") ? java.util.List.of("multipart/form-data") : view.headers(name, max);
      }

      @Override
      public int headerLines(String name) {
        return view.headerLines(name);
      }

      @Override
      public String principal() {
        return view.principal();
      }

      @Override
      public byte[] body() {
        return view.body();
      }
    };
  }

  private static boolean noConfiguration(IllegalStateException e) {
    String m = String.valueOf(e.getMessage()).toLowerCase(java.util.Locale.ROOT);
    return m.contains("config");
  }

  private static void field(ByteArrayOutputStream out, String value) {
    if (value == null) {
      length(out, -1);
      return;
    }
    byte[] b = value.getBytes(StandardCharsets.UTF_8);
    length(out, b.length);
    out.write(b, 0, b.length);
  }

  private static void length(ByteArrayOutputStream out, int n) {
    out.write(n >>> 24);
    out.write(n >>> 16);
    out.write(n >>> 8);
    out.write(n);
  }
}
