package io.retrybudget.grpc;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.Context;
import io.grpc.Deadline;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.retrybudget.retry.AttemptContext;
import io.retrybudget.retry.RetryExecutor;
import io.retrybudget.grpc.RetryBudgetClientInterceptor.Outcome;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * A server-streaming call, retried as gRFC A6 allows: while no response message has arrived, an
 * attempt that closes with a retryable status is sent again (the budget asked first, as for a unary
 * call); the first message <em>commits</em> the call to its attempt, whose stream then reaches the
 * caller as it comes, and whose later failure ends the call (a stream that delivered a message is
 * never sent again: the caller has acted on part of it).
 *
 * <p>States: WAITING (before {@code halfClose}), TRYING (attempts run under the executor),
 * STREAMING (committed: the caller's {@code request(n)} goes to the committed attempt), ENDED. The
 * caller's listener is called by one thread at a time: before the commit only by {@link #answer}; at
 * the commit the first message is delivered before more are requested from the attempt, and a close
 * that arrives meanwhile waits for it.
 */
final class RetryingStreamCall<ReqT, RespT> extends ClientCall<ReqT, RespT> {
  private enum State { WAITING, TRYING, STREAMING, ENDED }

  /** The attempt's first message arrived: the call is this attempt's from now on. */
  private static final class Committed {
    final ClientCall<?, ?> attempt;
    final Metadata headers;
    final Object first;
    Status closedStatus; // a close that came before the commit was taken (guarded by the call's lock)
    Metadata closedTrailers;

    Committed(ClientCall<?, ?> attempt, Metadata headers, Object first) {
      this.attempt = attempt;
      this.headers = headers;
      this.first = first;
    }
  }

  private final MethodDescriptor<ReqT, RespT> method;
  private final CallOptions options;
  private final Channel next;
  private final RetryExecutor executor;
  private final ScheduledExecutorService timers;
  private final Flow flow = new Flow();
  private Listener<RespT> listener;
  private Metadata headers;
  private ReqT message;

  /** The call's lifecycle, guarded by {@code this}. */
  private final class Flow {
    State state = State.WAITING;
    int requested; // the caller's request(n) before the commit
    CompletableFuture<Object> attempts;
    Committed committed;
    boolean firstDelivered;
    boolean firstHeld; // committed while the caller had requested nothing: delivered at its first request
    boolean cancelRequested;
    boolean closeDelivered; // the caller's onClose ran (once)
    ScheduledFuture<?> deadlineTimer;
    volatile boolean deadlineHit;
  }

  RetryingStreamCall(MethodDescriptor<ReqT, RespT> method, CallOptions options, Channel next, RetryExecutor executor,
      ScheduledExecutorService timers) {
    this.method = method;
    this.options = options;
    this.next = next;
    this.executor = executor;
    this.timers = timers;
  }

  @Override
  public void start(Listener<RespT> responseListener, Metadata headers) {
    this.listener = responseListener;
    this.headers = headers;
  }

  @Override
  public void request(int numMessages) {
    ClientCall<?, ?> forward;
    Committed release = null;
    synchronized (this) {
      if (flow.state != State.STREAMING || !flow.firstDelivered) {
        flow.requested = (int) Math.min(Integer.MAX_VALUE, (long) flow.requested + numMessages); // saturates
        if (flow.firstHeld && numMessages > 0) {
          flow.firstHeld = false;
          release = flow.committed;
        } else {
          return;
        }
      }
      forward = flow.committed.attempt;
    }
    if (release != null) {
      Committed c = release;
      run(() -> deliverFirst(c));
      return;
    }
    forward.request(numMessages);
  }

  @Override
  public void sendMessage(ReqT message) {
    this.message = message; // server-streaming: one request message
  }

  @Override
  public boolean isReady() {
    return true;
  }

  @Override
  public void halfClose() {
    Context context = Context.current();
    Deadline deadline = earliest(options.getDeadline(), context.getDeadline());
    CompletableFuture<Object> started;
    synchronized (this) {
      if (flow.state != State.WAITING) {
        return; // cancelled before it was sent
      }
      if (deadline != null && deadline.isExpired()) {
        started = null;
      } else {
        flow.state = State.TRYING;
        started = executor.callAsync(ctx -> {
          Context previous = context.attach();
          try {
            return attempt(ctx);
          } finally {
            context.detach(previous);
          }
        });
        flow.attempts = started;
      }
    }
    if (started == null) {
      answer(Status.DEADLINE_EXCEEDED.withDescription("deadline passed before the call started"), null, new Metadata());
      return;
    }
    Context.CancellationListener onCancel = c -> {
      if (c.cancellationCause() instanceof java.util.concurrent.TimeoutException) {
        flow.deadlineHit = true;
      }
      started.cancel(false);
    };
    context.addListener(onCancel, Runnable::run);
    started.whenComplete((o, e) -> context.removeListener(onCancel));
    if (deadline != null) {
      ScheduledFuture<?> timer = timers.schedule(() -> {
        flow.deadlineHit = true;
        started.cancel(false); // before the commit; after it, the committed attempt's own deadline rules
      }, deadline.timeRemaining(TimeUnit.NANOSECONDS), TimeUnit.NANOSECONDS);
      synchronized (this) {
        flow.deadlineTimer = timer;
      }
    }
    started.whenComplete(this::attemptsEnded);
  }

  @Override
  public void cancel(String why, Throwable cause) {
    CompletableFuture<Object> running;
    ClientCall<?, ?> streaming;
    synchronized (this) {
      running = flow.attempts;
      streaming = flow.state == State.STREAMING ? flow.committed.attempt : null;
      flow.cancelRequested = true; // an attempt that commits now is cancelled, not streamed
    }
    if (streaming != null) {
      streaming.cancel(why, cause);
    } else if (running != null) {
      running.cancel(false);
    } else if (listener != null) {
      answer(Status.CANCELLED.withDescription(why).withCause(cause), null, new Metadata());
    }
  }

  private static Deadline earliest(Deadline a, Deadline b) {
    return a == null ? b : b == null ? a : a.minimum(b);
  }

  /**
   * One attempt: a new call with the same message and headers. Its future ends with an {@link
   * Outcome} when it closes before any message (the executor may retry it), or with {@link Committed}
   * at its first message. Only the call's deadline bounds it on the wire: the policy's attempt
   * timeout, which the executor enforces, bounds the wait for the first message, not the stream.
   */
  private CompletableFuture<Object> attempt(AttemptContext context) {
    Metadata attemptHeaders = new Metadata();
    attemptHeaders.merge(headers);
    if (context.attempt() > 1) {
      attemptHeaders.put(RetryBudgetClientInterceptor.PREVIOUS_ATTEMPTS, Integer.toString(context.attempt() - 1));
    }
    ClientCall<ReqT, RespT> attempt = next.newCall(method, options);
    CompletableFuture<Object> result = new CompletableFuture<>();
    attempt.start(new Listener<RespT>() {
      private Metadata responseHeaders;
      private Committed committedHere;

      @Override
      public void onHeaders(Metadata h) {
        responseHeaders = h;
      }

      @Override
      public void onMessage(RespT m) {
        if (committedHere == null) {
          Committed c = new Committed(attempt, responseHeaders, m);
          if (result.complete(c)) {
            committedHere = c;
          }
          return;
        }
        listener.onMessage(m); // after the first, requested by the caller through the committed attempt
      }

      @Override
      public void onClose(Status status, Metadata trailers) {
        if (committedHere == null) {
          result.complete(new Outcome(status, responseHeaders, null, trailers));
          return;
        }
        streamClosed(committedHere, status, trailers);
      }
    }, attemptHeaders);
    attempt.request(1); // the first message decides: commit, or an attempt that failed before streaming
    attempt.sendMessage(message);
    attempt.halfClose();
    result.whenComplete((o, e) -> {
      if (e != null) { // cancelled by the executor: an attempt timeout, the call's deadline, the caller
        attempt.cancel("retry-budget: attempt cancelled", e);
      }
    });
    return result;
  }

  private void attemptsEnded(Object value, Throwable failure) {
    ScheduledFuture<?> timer;
    synchronized (this) {
      timer = flow.deadlineTimer;
    }
    if (timer != null) {
      timer.cancel(false);
    }
    if (value instanceof Committed c) {
      commit(c);
    } else if (value instanceof Outcome o) {
      answer(o.status, o.headers, o.trailers);
    } else {
      failed(failure);
    }
  }

  /** The caller gets the attempt's headers and first message, then asks it for what it had requested. */
  private void commit(Committed c) {
    boolean cancelled;
    boolean deliver = false;
    synchronized (this) {
      cancelled = flow.state != State.TRYING || flow.cancelRequested;
      if (!cancelled) {
        flow.state = State.STREAMING;
        flow.committed = c;
        flow.firstHeld = flow.requested == 0;
        deliver = !flow.firstHeld;
      }
    }
    if (cancelled) {
      c.attempt.cancel("retry-budget: the call was cancelled", null);
      answer(Status.CANCELLED.withDescription("call cancelled"), null, new Metadata());
    } else if (deliver) {
      run(() -> deliverFirst(c));
    }
  }

  /** The commit's headers and first message, then the caller's other requests go to the attempt. */
  private void deliverFirst(Committed c) {
    try {
      if (c.headers != null) {
        listener.onHeaders(c.headers);
      }
      @SuppressWarnings("unchecked")
      RespT first = (RespT) c.first;
      listener.onMessage(first);
    } catch (RuntimeException | Error e) {
      // as gRPC's own call does: a listener that throws cancels the call, which still gets its close
      synchronized (this) {
        flow.firstDelivered = true;
        flow.state = State.ENDED;
      }
      c.attempt.cancel("the listener threw", e);
      closeOnce(Status.CANCELLED.withDescription("the call's listener threw").withCause(e), new Metadata());
      return;
    }
    int more;
    Status closed;
    Metadata trailers;
    synchronized (this) {
      flow.firstDelivered = true;
      more = flow.requested - 1;
      flow.requested = 0;
      closed = c.closedStatus;
      trailers = c.closedTrailers;
      if (closed != null) {
        flow.state = State.ENDED;
      }
    }
    if (closed != null) {
      closeOnce(closed, trailers);
    } else if (more > 0) {
      c.attempt.request(more);
    }
  }

  /**
   * The committed attempt closed. After the first message: at once. Before it was handed over: OK
   * waits for it (a completed stream is read to its end); any other close (a failure, the caller's
   * cancel, the deadline) drops a first message the caller has not requested yet and ends the call
   * now, as gRPC does with messages not yet read.
   */
  private void streamClosed(Committed c, Status status, Metadata trailers) {
    boolean dropHeld = false;
    synchronized (this) {
      if (!flow.firstDelivered) {
        if (!flow.firstHeld || (status.isOk() && !flow.cancelRequested)) {
          c.closedStatus = status; // delivered right after the first message (deliverFirst)
          c.closedTrailers = trailers;
          return;
        }
        flow.firstHeld = false;
        flow.firstDelivered = true; // never handed over
        dropHeld = true;
      }
      flow.state = State.ENDED;
    }
    if (dropHeld) {
      run(() -> {
        if (c.headers != null) {
          listener.onHeaders(c.headers);
        }
        closeOnce(status, trailers);
      });
      return;
    }
    closeOnce(status, trailers);
  }

  /** The caller's onClose, at most once (a listener that threw has had its close already). */
  private void closeOnce(Status status, Metadata trailers) {
    synchronized (this) {
      if (flow.closeDelivered) {
        return;
      }
      flow.closeDelivered = true;
    }
    listener.onClose(status, trailers);
  }

  private void failed(Throwable failure) {
    Outcome o = Outcome.ofFailure(failure, flow.deadlineHit);
    answer(o.status, o.headers, o.trailers);
  }

  /** Ends the call before any message reached the caller. */
  private void answer(Status status, Metadata responseHeaders, Metadata trailers) {
    synchronized (this) {
      if (flow.state == State.STREAMING || flow.state == State.ENDED) {
        return; // answered once, or the stream's own close answers
      }
      flow.state = State.ENDED;
    }
    run(() -> {
      if (responseHeaders != null) {
        listener.onHeaders(responseHeaders);
      }
      closeOnce(status, trailers != null ? trailers : new Metadata());
    });
  }

  /** Through the call's executor when it has one (a blocking stub drains its own ThreadlessExecutor). */
  private void run(Runnable delivery) {
    Executor callbacks = options.getExecutor();
    if (callbacks != null) {
      callbacks.execute(delivery);
    } else {
      delivery.run();
    }
  }
}
