package io.retrybudget.server.servlet;

import io.retrybudget.server.IdempotencyGuard;
import io.retrybudget.server.Problems;
import io.retrybudget.server.StoredResponse;
import jakarta.servlet.ServletOutputStream;
import jakarta.servlet.WriteListener;
import jakarta.servlet.http.HttpServletResponse;
import jakarta.servlet.http.HttpServletResponseWrapper;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * Keeps the servlet's body in memory until the answer is stored; status and headers go to the
 * real response, which stays uncommitted. A body beyond {@code cap} is sent on as it comes and
 * stored without its body.
 */
final class CapturingResponse extends HttpServletResponseWrapper {
  private final HttpServletResponse real;
  private final int cap;
  private final ByteArrayOutputStream buffer = new ByteArrayOutputStream();
  private boolean overflowed;
  private ServletOutputStream stream;
  private PrintWriter writer;

  CapturingResponse(HttpServletResponse real, int cap) {
    super(real);
    this.real = real;
    this.cap = cap;
  }

  private void append(byte[] b, int off, int len) throws IOException {
    if (!overflowed && buffer.size() + len > cap) {
      overflowed = true;
      real.getOutputStream().write(buffer.toByteArray());
      buffer.reset();
    }
    if (overflowed) {
      real.getOutputStream().write(b, off, len);
    } else {
      buffer.write(b, off, len);
    }
  }

  @Override
  public ServletOutputStream getOutputStream() {
    if (writer != null) {
      throw new IllegalStateException("getWriter() was called already");
    }
    if (stream == null) {
      stream = new ServletOutputStream() {
        @Override
        public void write(int b) throws IOException {
          append(new byte[] {(byte) b}, 0, 1);
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
          append(b, off, len);
        }

        @Override
        public boolean isReady() {
          return true;
        }

        @Override
        public void setWriteListener(WriteListener listener) {
          throw new IllegalStateException("async writes are not supported behind IdempotencyFilter");
        }
      };
    }
    return stream;
  }

  @Override
  public PrintWriter getWriter() {
    if (writer == null) {
      if (stream != null) {
        throw new IllegalStateException("getOutputStream() was called already");
      }
      String enc = getCharacterEncoding();
      Charset cs = enc == null ? StandardCharsets.UTF_8 : Charset.forName(enc);
      writer = new PrintWriter(new OutputStreamWriter(getOutputStream(), cs));
    }
    return writer;
  }

  @Override
  public void flushBuffer() throws IOException {
    if (overflowed) {
      real.flushBuffer();
    }
  }

  @Override
  public void sendError(int sc, String msg) throws IOException {
    resetBuffer();
    setStatus(sc);
    setContentType(Problems.CONTENT_TYPE);
    byte[] b = new String(Problems.of(sc, "error", msg == null ? "error" : msg, "").body(), StandardCharsets.UTF_8)
        .getBytes(StandardCharsets.UTF_8);
    append(b, 0, b.length);
  }

  @Override
  public void sendError(int sc) throws IOException {
    sendError(sc, null);
  }

  @Override
  public void setContentLength(int len) {
    // the length is set when the captured body is sent
  }

  @Override
  public void setContentLengthLong(long len) {
    // as above
  }

  @Override
  public void resetBuffer() {
    if (!overflowed) {
      buffer.reset();
    }
    super.resetBuffer();
  }

  @Override
  public void reset() {
    if (!overflowed) {
      buffer.reset();
    }
    super.reset();
  }

  void flushWriter() {
    if (writer != null) {
      writer.flush();
    }
  }

  StoredResponse answer() {
    List<StoredResponse.Header> headers = new ArrayList<>();
    for (String name : real.getHeaderNames()) {
      for (String value : real.getHeaders(name)) {
        headers.add(new StoredResponse.Header(name, value));
      }
    }
    if (overflowed) {
      headers.add(new StoredResponse.Header(IdempotencyGuard.BODY_OMITTED_HEADER, "true"));
      return new StoredResponse(real.getStatus(), headers, new byte[0]);
    }
    return new StoredResponse(real.getStatus(), headers, buffer.toByteArray());
  }

  /** Sends the captured body (the rest went out already when it overflowed). */
  void commit() throws IOException {
    if (!overflowed) {
      real.setContentLength(buffer.size());
      real.getOutputStream().write(buffer.toByteArray());
    }
  }
}
