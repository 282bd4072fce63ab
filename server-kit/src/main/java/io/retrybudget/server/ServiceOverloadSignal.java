package io.retrybudget.server;

/**
 * Whether the whole service (every replica), not just this one, is overloaded: the only case in
 * which a shed request is told "do not retry" ({@code X-Retry-Pushback-Ms: -1}). One overloaded
 * replica must never say so — a retry to another replica is exactly what helps (Envoy learned it
 * in 2020, when "never retry an overloaded host" had to be undone).
 *
 * <p>Sources: {@link FleetShedSignal} (the fleet's shed fraction through a shared retry budget in
 * Redis), or anything that knows — a control-plane flag, an autoscaler at its maximum — as a
 * lambda. Called on the request's thread when it is shed: must answer at once, without I/O.
 */
@FunctionalInterface
public interface ServiceOverloadSignal {
  /** The default: never say "do not retry". */
  ServiceOverloadSignal NEVER = () -> false;

  boolean wholeServiceOverloaded();

  /** Told of each admitted request (no I/O allowed). */
  default void onAdmitted() {}

  /** Told of each shed request (no I/O allowed on the caller's thread). */
  default void onShed() {}
}
