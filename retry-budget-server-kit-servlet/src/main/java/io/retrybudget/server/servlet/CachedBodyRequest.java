package io.retrybudget.server.servlet;

import jakarta.servlet.ReadListener;
import jakarta.servlet.ServletInputStream;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletRequestWrapper;
import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.InputStreamReader;
import java.net.URLDecoder;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Enumeration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The request with its body read once (for the fingerprint) and served again to the servlet: as a
 * stream, as a reader, and — for {@code application/x-www-form-urlencoded} POSTs — as parameters,
 * as the Servlet specification (6.1, section 3.1.1) defines them: the query string's parameters
 * (the container's own, it parses the query), then the body's, decoded from the cached bytes with
 * the request's character encoding (else the context's request encoding, else the container's
 * default: ISO-8859-1 as the specification says, UTF-8 on Jetty). The container cannot parse the
 * body itself any more: the filter read it.
 * Multipart requests are not wrapped: the container parses their parts itself (see {@link
 * IdempotencyFilter}).
 */
final class CachedBodyRequest extends HttpServletRequestWrapper {
  private final byte[] body;
  private Map<String, String[]> parameters;

  CachedBodyRequest(HttpServletRequest request, byte[] body) {
    super(request);
    this.body = body;
  }

  /** Whether a content type names a form the Servlet API exposes as parameters. */
  static boolean isForm(String contentType) {
    return contentType != null
        && baseType(contentType).equals("application/x-www-form-urlencoded");
  }

  /** The media type without parameters, lower case ({@code multipart/form-data}). */
  static String baseType(String contentType) {
    int semi = contentType.indexOf(';');
    return (semi < 0 ? contentType : contentType.substring(0, semi)).strip().toLowerCase(Locale.ROOT);
  }

  @Override
  public ServletInputStream getInputStream() {
    ByteArrayInputStream in = new ByteArrayInputStream(body);
    return new ServletInputStream() {
      @Override
      public int read() {
        return in.read();
      }

      @Override
      public int read(byte[] b, int off, int len) {
        return in.read(b, off, len);
      }

      @Override
      public boolean isFinished() {
        return in.available() == 0;
      }

      @Override
      public boolean isReady() {
        return true;
      }

      @Override
      public void setReadListener(ReadListener listener) {
        throw new IllegalStateException("async reads are not supported behind IdempotencyFilter");
      }
    };
  }

  @Override
  public BufferedReader getReader() {
    return new BufferedReader(new InputStreamReader(new ByteArrayInputStream(body), charset()));
  }

  @Override
  public int getContentLength() {
    return body.length;
  }

  @Override
  public long getContentLengthLong() {
    return body.length;
  }

  @Override
  public String getParameter(String name) {
    String[] values = parameters().get(name);
    return values == null || values.length == 0 ? null : values[0];
  }

  @Override
  public Map<String, String[]> getParameterMap() {
    return parameters();
  }

  @Override
  public Enumeration<String> getParameterNames() {
    return Collections.enumeration(parameters().keySet());
  }

  @Override
  public String[] getParameterValues(String name) {
    String[] values = parameters().get(name);
    return values == null ? null : values.clone();
  }

  private Charset charset() {
    String enc = getCharacterEncoding();
    if (enc == null && getServletContext() != null) {
      enc = getServletContext().getRequestCharacterEncoding();
    }
    return enc != null ? Charset.forName(enc) : containerDefault();
  }

  /**
   * What the container decodes a body without a declared charset with: ISO-8859-1 as the Servlet
   * specification says (Tomcat 11 does), except Jetty 12, which decodes UTF-8.
   */
  private Charset containerDefault() {
    String server = getServletContext() == null ? "" : String.valueOf(getServletContext().getServerInfo());
    return server.toLowerCase(Locale.ROOT).contains("jetty") ? StandardCharsets.UTF_8 : StandardCharsets.ISO_8859_1;
  }

  /** Query then body parameters, in the order received; an unmodifiable map, as the API asks. */
  private synchronized Map<String, String[]> parameters() {
    if (parameters == null) {
      Map<String, List<String>> all = new LinkedHashMap<>();
      for (Map.Entry<String, String[]> e : super.getParameterMap().entrySet()) {
        all.computeIfAbsent(e.getKey(), k -> new ArrayList<>()).addAll(List.of(e.getValue()));
      }
      if ("POST".equalsIgnoreCase(getMethod()) && isForm(getContentType())) {
        decodeForm(new String(body, StandardCharsets.ISO_8859_1), charset(), all);
      }
      Map<String, String[]> done = new LinkedHashMap<>();
      all.forEach((k, v) -> done.put(k, v.toArray(new String[0])));
      parameters = Collections.unmodifiableMap(done);
    }
    return parameters;
  }

  /**
   * {@code a=1&b=x+y&a=2}: '+' is a space, %XX a byte of {@code charset} (the JDK's URLDecoder). A
   * pair without '=' is a name with an empty value; empty pairs are skipped. A malformed escape is
   * taken literally rather than failing the servlet's call (the raw body stays readable).
   */
  static void decodeForm(String form, Charset charset, Map<String, List<String>> into) {
    for (String pair : form.split("&")) {
      if (pair.isEmpty()) {
        continue;
      }
      int eq = pair.indexOf('=');
      String name = decode(eq < 0 ? pair : pair.substring(0, eq), charset);
      String value = eq < 0 ? "" : decode(pair.substring(eq + 1), charset);
      into.computeIfAbsent(name, k -> new ArrayList<>()).add(value);
    }
  }

  private static String decode(String s, Charset charset) {
    // the body was read as ISO-8859-1 (one char per byte): bytes beyond ASCII are re-encoded first
    String ascii = new String(s.getBytes(StandardCharsets.ISO_8859_1), charset);
    try {
      return URLDecoder.decode(ascii, charset);
    } catch (IllegalArgumentException malformed) {
      return ascii;
    }
  }
}
