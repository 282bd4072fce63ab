package io.retrybudget.coordinator.http;

import java.util.Locale;

/** Why the connection guard closed a connection: the {@code reason} tag of its closed-connections counter. */
enum CloseReason {
  REFUSED, PER_IP_LIMIT, EVICTED, HEADER_TIMEOUT, BODY_TIMEOUT, RESPONSE_TIMEOUT, IDLE_TIMEOUT;

  String tag() {
    return name().toLowerCase(Locale.ROOT);
  }
}
