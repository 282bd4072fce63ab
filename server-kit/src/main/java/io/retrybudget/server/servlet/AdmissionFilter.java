package io.retrybudget.server.servlet;

import io.retrybudget.server.RetryAwareAdmission;
import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.util.Objects;
import java.util.Optional;

/**
 * {@link RetryAwareAdmission} as a Servlet 6.1 filter (map it first): sheds with 503 and pushback,
 * or runs the chain and reports its outcome (2xx-4xx success, 5xx ignored, an exception dropped).
 */
public final class AdmissionFilter implements Filter {
  private final RetryAwareAdmission admission;

  public AdmissionFilter(RetryAwareAdmission admission) {
    this.admission = Objects.requireNonNull(admission, "admission must not be null");
  }

  @Override
  public void doFilter(ServletRequest request, ServletResponse response, FilterChain chain)
      throws IOException, ServletException {
    if (!(request instanceof HttpServletRequest req) || !(response instanceof HttpServletResponse res)) {
      chain.doFilter(request, response);
      return;
    }
    int attempt = RetryAwareAdmission.attemptOf(req.getHeader(RetryAwareAdmission.ATTEMPT_HEADER));
    Optional<RetryAwareAdmission.Permit> permit = admission.tryAcquire(attempt);
    if (permit.isEmpty()) {
      IdempotencyFilter.write(res, admission.shedAnswer());
      return;
    }
    RetryAwareAdmission.Permit p = permit.get();
    try {
      chain.doFilter(request, response);
    } catch (IOException | ServletException | RuntimeException | Error e) {
      p.onDropped();
      throw e;
    }
    if (res.getStatus() >= 500) {
      p.onIgnore();
    } else {
      p.onSuccess();
    }
  }
}
