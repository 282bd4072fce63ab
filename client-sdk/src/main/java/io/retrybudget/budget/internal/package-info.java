/**
 * Not API: the budget's arithmetic and state machines, public only so that the SDK's other
 * packages can use them. They may change or go in any release without notice; the API check
 * (docs/RELEASING.md) leaves out every package named {@code internal}.
 */
package io.retrybudget.budget.internal;
