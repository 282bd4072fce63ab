/**
 * Not API: the SDK's own helpers, public only so that its other packages can use them. They may
 * change or go in any release without notice; the API check (docs/RELEASING.md) leaves out every
 * package named {@code internal}.
 */
package io.retrybudget.internal;
