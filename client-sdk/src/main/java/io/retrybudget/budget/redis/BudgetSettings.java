package io.retrybudget.budget.redis;

/** A budget's configuration as the scripts answer it. */
public record BudgetSettings(long ratioPpm, int windowSeconds, int minRetriesPerSecond, String mode) {}
