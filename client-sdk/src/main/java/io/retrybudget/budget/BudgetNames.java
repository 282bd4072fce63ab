package io.retrybudget.budget;

import java.util.regex.Pattern;

/**
 * The rule every part applies to budget names: {@code [A-Za-z0-9._-]{1,100}}, except {@code .} and
 * {@code ..} (a URL path would resolve them away: such a budget could be listed but never reached).
 */
public final class BudgetNames {
  private static final Pattern VALID = Pattern.compile("[A-Za-z0-9._-]{1,100}");

  private BudgetNames() {}

  public static boolean isValid(String name) {
    return name != null && VALID.matcher(name).matches() && !name.equals(".") && !name.equals("..");
  }

  /** Returns the name, or throws {@link IllegalArgumentException} naming the field {@code name}. */
  public static String requireValid(String name) {
    if (!isValid(name)) {
      throw new IllegalArgumentException(
          "name must match [A-Za-z0-9._-]{1,100} and not be . or .., was " + (name == null ? "null" : "'" + name + "'"));
    }
    return name;
  }
}
