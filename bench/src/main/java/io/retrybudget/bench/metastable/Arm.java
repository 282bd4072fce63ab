package io.retrybudget.bench.metastable;

import io.retrybudget.budget.BudgetConfig;
import io.retrybudget.budget.LocalRetryBudget;
import io.retrybudget.budget.RetryBudget;
import io.retrybudget.retry.RetryListener;
import java.util.Locale;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * One way a fleet's clients decide on retries, and what its backend does with what waits. Every
 * client of an arm has a budget of its own ({@link #clientBudget}), as a separate process would;
 * only {@link #FLEET} and {@link #FLEET_SERVER} share their counts (each arm its own), through Redis
 * in the real run (one {@code RedisBudgetClient} per client JVM, one {@code RetryBudget} per client)
 * and through one shared {@link LocalRetryBudget} of the same paced rule in the fake-time model.
 * Only {@link #FLEET_SERVER}'s backend runs server-kit's admission queue ({@link #serverHalf}); the
 * others serve a bounded FIFO queue.
 */
enum Arm {
  /** Every retryable failure is retried, up to the attempts the policy allows. */
  NAIVE("naive"),
  /** Finagle's and Linkerd's default retry budget, per client: 20 % of first attempts + 10/s. */
  FINAGLE("per-client 20%+10/s"),
  /** gRPC {@code retryThrottling} per client: maxTokens 10, tokenRatio 0.1. */
  GRPC("gRPC throttling"),
  /** The AWS SDKs' retry quota per client, 2026 figures: 500 tokens, 14 per retry. */
  AWS("AWS retry quota"),
  /** The fleet budget: ratio 0.1 and a floor of 10 retries/s for the whole fleet. */
  FLEET("fleet budget"),
  /**
   * The fleet budget, and server-kit's admission queue at the backend: deadline-aware, CoDel-timed,
   * adaptive LIFO, retries shed first with a spread pushback the clients obey.
   */
  FLEET_SERVER("fleet budget + server half");

  private final String label;

  Arm(String label) {
    this.label = label;
  }

  String label() {
    return label;
  }

  /**
   * The name used in flags and CSV files: {@code naive}, {@code finagle}, {@code grpc}, {@code aws},
   * {@code fleet}, {@code fleet-server}.
   */
  String id() {
    return name().toLowerCase(Locale.ROOT).replace('_', '-');
  }

  /** Whether the arm's clients share the fleet budget (in Redis in the real run). */
  boolean fleetBudget() {
    return this == FLEET || this == FLEET_SERVER;
  }

  /** Whether the arm's backend runs server-kit's admission queue instead of the FIFO queue. */
  boolean serverHalf() {
    return this == FLEET_SERVER;
  }

  static Arm byId(String id) {
    for (Arm a : values()) {
      if (a.id().equals(id.trim().toLowerCase(Locale.ROOT))) {
        return a;
      }
    }
    throw new IllegalArgumentException("arm must be one of naive, finagle, grpc, aws, fleet, fleet-server, was " + id);
  }

  /** The fleet budget's configuration: the product's defaults. */
  static BudgetConfig fleetConfig(String budgetName) {
    return BudgetConfig.builder(budgetName).ratio(0.10).minRetriesPerSecond(10).windowSeconds(10).build();
  }

  /** Finagle's {@code RetryBudget} defaults (Linkerd ships the same): ratio 0.2, 10/s, 10 s. */
  static BudgetConfig finagleConfig(String budgetName) {
    return BudgetConfig.builder(budgetName).ratio(0.20).minRetriesPerSecond(10).windowSeconds(10).build();
  }

  /**
   * One client's budget and the listener that feeds it (attach both to the client's executor).
   *
   * @param millisClock the clock per-client windows are counted on (fake time in the model)
   * @param fleet       the budget a {@link #fleetBudget} arm's client gets (one per client from a
   *     {@code RedisBudgetClient}, or the model's shared one); not called for other arms
   */
  ClientBudget clientBudget(String budgetName, LongSupplier millisClock, Supplier<RetryBudget> fleet) {
    switch (this) {
      case NAIVE:
        return new ClientBudget(null, RetryListener.NONE);
      case FINAGLE:
        return new ClientBudget(new LocalRetryBudget(finagleConfig(budgetName), millisClock), RetryListener.NONE);
      case GRPC: {
        GrpcRetryThrottle t = new GrpcRetryThrottle(budgetName, 10, 0.1);
        return new ClientBudget(t, t.listener());
      }
      case AWS: {
        AwsRetryQuota q = AwsRetryQuota.defaults2026(budgetName);
        return new ClientBudget(q, q.listener());
      }
      case FLEET:
      case FLEET_SERVER:
        return new ClientBudget(fleet.get(), RetryListener.NONE);
      default:
        throw new IllegalStateException("no budget for " + this);
    }
  }

  /** A client's budget (null: no budget) and the listener its executor must feed it through. */
  record ClientBudget(RetryBudget budget, RetryListener listener) {}
}
