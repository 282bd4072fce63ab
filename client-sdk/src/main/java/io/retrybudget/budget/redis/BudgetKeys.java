package io.retrybudget.budget.redis;

import io.retrybudget.budget.BudgetNames;

/**
 * The Redis keys of one budget: layout version 2 (the window's ring packed in one string; lua/README.md),
 * the budget's name as the Cluster hash tag, so every script touches one slot and a future layout can
 * live beside this one.
 */
public final class BudgetKeys {
  public static final String PREFIX = "rb:v2:";

  private final String name;
  private final String config;
  private final String window;
  private final String clients;

  public BudgetKeys(String name) {
    this.name = BudgetNames.requireValid(name);
    String base = PREFIX + "{" + name + "}:";
    this.config = base + "cfg";
    this.window = base + "win";
    this.clients = base + "clients";
  }

  public String name() {
    return name;
  }

  public String config() {
    return config;
  }

  public String window() {
    return window;
  }

  public String clients() {
    return clients;
  }

  /** The budget a key belongs to, or null when the key is not one of ours. */
  public static String budgetOf(String key) {
    if (!key.startsWith(PREFIX + "{")) {
      return null;
    }
    int close = key.indexOf("}:", PREFIX.length() + 1);
    if (close < 0) {
      return null;
    }
    String name = key.substring(PREFIX.length() + 1, close);
    return BudgetNames.isValid(name) ? name : null;
  }
}
