/**
 * The typed protocol of the budget scripts in {@code lua/}: their keys ({@link
 * io.retrybudget.budget.redis.protocol.BudgetKeys}), positional arguments ({@link
 * io.retrybudget.budget.redis.protocol.BudgetCall}, {@link io.retrybudget.budget.redis.protocol.ConfigChange})
 * and replies ({@link io.retrybudget.budget.redis.protocol.BudgetReply}, {@link
 * io.retrybudget.budget.redis.protocol.StatusReply}, {@link
 * io.retrybudget.budget.redis.protocol.BudgetSettings}), built and parsed in one place, {@link
 * io.retrybudget.budget.redis.protocol.BudgetScripts}.
 *
 * <p><b>Internal, not a stable API.</b> It is public because the product's own modules (the
 * coordinator, server-kit, the Spring Boot starter, the CLI) share it; its types change with the
 * scripts' layout version without notice. Applications use {@code io.retrybudget.budget}
 * ({@code RedisBudgetClient}, {@code RetryBudget}) instead. The one type an application may see is
 * {@link io.retrybudget.budget.redis.protocol.BrokenBudgetException}, as the cause of a budget call
 * that found the budget's keys unusable in Redis.
 */
package io.retrybudget.budget.redis.protocol;
