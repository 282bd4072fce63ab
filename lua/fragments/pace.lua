-- fragments/pace.lua: begin. The paced rule in integers (micro-permits: 10^6 per permit).
-- Included by budget.lua and status.lua where they say --#include (lua/README.md, "Fragments"); not a
-- script of its own. io.retrybudget.budget.internal.PaceArithmetic is the same rule in Java (parity-tested
-- inside Redis against the assembled scripts).
local PPM = 1000000
local MAX_RATE = 1000000000
-- the time the window's first attempts span (ms): the whole window once it has had first attempts
-- for that long (the leaving bucket holds some, or `oldest`, the oldest bucket in it that does, is
-- nil); a younger or newly busy budget's since the start of that bucket, at least one bucket
local function pace_span(oldest, cur, now, bucket_ms, window_ms)
  if oldest == nil or oldest <= cur - 10 then return window_ms end
  local span = now - oldest * bucket_ms
  if span < bucket_ms then span = bucket_ms end
  if span > window_ms then span = window_ms end
  return span
end
-- the rate the balance refills at, micro-permits a second: the window's first attempts a second
-- (over the time they span) times the ratio, rounded down, plus the floor; split so that every
-- product stays exact; first attempts above 10^9 a second count as 10^9
local function pace_rate(requests, span_ms, ratio_ppm, min_rps)
  if requests * 1000 >= MAX_RATE * span_ms then return MAX_RATE * ratio_ppm + min_rps * PPM end
  local reqk = requests * 1000
  local whole = math.floor(reqk / span_ms)
  local rest = reqk - whole * span_ms
  return whole * ratio_ppm + math.floor(rest * ratio_ppm / span_ms) + min_rps * PPM
end
-- the balance's cap: half a second of that rate, at least one whole permit unless the rate is zero
local function pace_cap(refill)
  local cap = math.floor(refill / 2)
  if refill > 0 and cap < PPM then cap = PPM end
  return cap
end
-- a new balance (none stored): what the window's first attempts and floor deposited, under the cap
-- (so a budget that has had steady traffic starts full, one that has had little does not)
local function pace_start(requests, window_s, ratio_ppm, min_rps, cap)
  if requests >= 9000000000 then return cap end
  local balance = requests * ratio_ppm + min_rps * window_s * PPM
  if balance > cap then balance = cap end
  return balance
end
-- the balance carried from `at` to `now` (Redis ms): the floor's refill for the time between, then
-- `add` first attempts' deposits, never above the cap (sums that leave the exact range of a double
-- are far above any cap, and end at the cap)
local function pace_refill(balance, at, now, add, ratio_ppm, min_rps, cap)
  local elapsed = now - at
  if elapsed < 0 then elapsed = 0 end
  if elapsed >= 9000000 then balance = cap else balance = balance + elapsed * min_rps * 1000 end
  if add >= 9000000000 then balance = cap else balance = balance + add * ratio_ppm end
  if balance > cap then balance = cap end
  return balance
end
-- ms until the balance holds a whole permit at the refill rate; 0: it does; -1: it never refills
local function pace_next_ms(balance, refill)
  if balance >= PPM then return 0 end
  if refill == 0 then return -1 end
  return math.floor(((PPM - balance) * 1000 + refill - 1) / refill)
end
-- fragments/pace.lua: end
