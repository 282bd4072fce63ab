-- fragments/trust.lua: begin (uses PPM and MAX_RATE of fragments/pace.lua).
-- Included by budget.lua and status.lua; io.retrybudget.budget.internal.TrustArithmetic is the same in Java.
-- The trust model's caps. One call's report counts up to the larger of 10^6 and 10^9 / max_calls_per_s
-- (a second of the most the rate counts, shared by the calls a second the budget allows); a bucket
-- holds at most what 10^9 first attempts a second fill it with, and sums stop there.
local function trust_call_cap(max_calls)
  return math.max(PPM, math.ceil(MAX_RATE / max_calls))
end
local function trust_bucket_cap(bucket_ms)
  return MAX_RATE / 1000 * bucket_ms
end
local function trust_add(count, add, cap)
  local v = count + add
  if v > cap then v = cap end
  return v
end
-- a slot of the ring that can be counted: every count in [0, cap], its last grant time not negative
local function trust_slot_ok(q, g, d, a, l, cap)
  return q >= 0 and g >= 0 and d >= 0 and a >= 0 and l >= 0 and q <= cap and g <= cap and d <= cap and a <= cap
end
-- fragments/trust.lua: end
