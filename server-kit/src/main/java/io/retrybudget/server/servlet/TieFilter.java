package io.retrybudget.server.servlet;

import io.retrybudget.server.TieGuard;
import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.util.Objects;
import java.util.concurrent.TimeUnit;

/**
 * {@link TieGuard} as a Servlet 6.1 filter: a tied copy that lost answers at once; one that runs
 * gets {@code X-Tie-Won: true} on its answer. Map it before the idempotency and admission filters.
 */
public final class TieFilter implements Filter {
  private final TieGuard ties;

  public TieFilter(TieGuard ties) {
    this.ties = Objects.requireNonNull(ties, "ties must not be null");
  }

  @Override
  public void doFilter(ServletRequest request, ServletResponse response, FilterChain chain)
      throws IOException, ServletException {
    if (request instanceof HttpServletRequest req && response instanceof HttpServletResponse res
        && req.getHeader(TieGuard.TIE_HEADER) != null) {
      TieGuard.Decision d;
      try {
        // the claim's future ends within the store's timeout; this bound is a second fence
        d = ties.begin(IdempotencyFilter.view(req, new byte[0])).get(10, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new ServletException(e);
      } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
        d = TieGuard.Decision.EXECUTE;
      }
      if (d == TieGuard.Decision.LOST) {
        IdempotencyFilter.write(res, TieGuard.lostAnswer());
        return;
      }
      res.setHeader(TieGuard.WON_HEADER, "true"); // this copy runs: its answer decides the call
    }
    chain.doFilter(request, response);
  }
}
