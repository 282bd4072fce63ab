-- status.lua: read a budget's configuration and window without changing anything.
-- Documented in lua/README.md (KEYS, ARGV, reply).
-- the same window as budget.lua: 10 buckets in a ring of 11, the leaving bucket counted by its share
-- (first attempts, denials) and its grants in full until one window after its last grant
local BUCKETS = 10
local RING = 11
local DEFAULT_MAX_CALLS = 2000
local FLEET_MS = 120000 -- the fleet is counted per epoch of this length, as in budget.lua
-- KEYS[3], the paced balance, and KEYS[4], the clients hash, are optional (callers of an older SDK
-- pass two or three keys)
local cfg_key, win_key, pace_key, cli_key = KEYS[1], KEYS[2], KEYS[3], KEYS[4]

-- pace: begin. The paced rule in integers (micro-permits: 10^6 per permit). status.lua holds the
-- same text; io.retrybudget.budget.internal.PaceArithmetic is the same rule in Java (parity-tested).
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
-- The fleet record (the clients hash's field '') brought to `epoch`: clients counted in it, clients
-- counted in the epoch before, and whether the record was already of this epoch. A record of an
-- earlier epoch gives its count as the epoch before's (the last epoch with calls: every client that
-- still lives was in it); one stamped ahead of this clock (a failover to a replica whose clock is
-- behind) carries the most it knew; one that is not of the form `<epoch>:<n>:<n>` reads as none.
local function fleet_read(record, epoch)
  local e, n, p = string.match(record or '', '^(%d+):(%d+):(%d+)$')
  e, n, p = tonumber(e), tonumber(n), tonumber(p)
  if e == epoch then return n, p, true end
  if e == nil then return 0, 0, false end
  if e < epoch then return 0, n, false end
  return 0, math.max(n, p), false
end
-- pace: end

local function in_range(v, lo, hi)
  return v ~= nil and v == v and v >= lo and v <= hi and v == math.floor(v)
end
local function broken(key, field, why)
  return redis.error_reply('ERR broken key=' .. key .. ' field=' .. field .. ' ' .. why)
end

local cfg = redis.pcall('HMGET', cfg_key, 'ratio_ppm', 'window_s', 'min_rps', 'mode', 'src', 'max_calls_per_s')
if cfg.err then return broken(cfg_key, 'type', 'is not a hash') end
local ratio_ppm = tonumber(cfg[1] or ARGV[1])
local window_s = tonumber(cfg[2] or ARGV[2])
local min_rps = tonumber(cfg[3] or ARGV[3])
local mode = cfg[4] or ARGV[4]
if not in_range(ratio_ppm, 1, 1000000) then return broken(cfg_key, 'ratio_ppm', 'must be an integer in [1, 1000000]') end
if not in_range(window_s, 1, 3600) then return broken(cfg_key, 'window_s', 'must be an integer in [1, 3600]') end
if not in_range(min_rps, 0, 1000000) then return broken(cfg_key, 'min_rps', 'must be an integer in [0, 1000000]') end
if mode ~= 'enforce' and mode ~= 'shadow' then return broken(cfg_key, 'mode', 'must be enforce or shadow') end
local max_calls = tonumber(cfg[6] or ARGV[5] or DEFAULT_MAX_CALLS)
if not in_range(max_calls, 1, 1000000) then return broken(cfg_key, 'max_calls_per_s', 'must be an integer in [1, 1000000]') end
-- who wrote the configuration: 'set' (configure.lua), 'seed' (a client's seed), '' (none stored)
local src = cfg[5] or ((cfg[1] or cfg[2] or cfg[3] or cfg[4]) and 'seed' or '')

local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local bucket_ms = window_s * 1000 / BUCKETS
local cur = math.floor(now_ms / bucket_ms)
local inside_ms = bucket_ms - (now_ms - cur * bucket_ms)

-- the ring as budget.lua keeps it: one string, the bucket length in ms and 11 slots of six
-- little-endian 64-bit integers (t, q, g, d, a, l)
local FIELDS = 6
local raw = redis.pcall('GET', win_key)
if type(raw) == 'table' and raw.err then return broken(win_key, 'type', 'is not a string') end
local w
if raw and #raw == 8 + RING * 48 then w = { struct.unpack('<' .. string.rep('i8', 1 + RING * FIELDS), raw) } end
-- the paced balance as budget.lua keeps it: micro-permits and the Redis ms of its last update
local balance, pace_at = nil, now_ms
if pace_key then
  local praw = redis.pcall('GET', pace_key)
  if type(praw) == 'table' and praw.err then return broken(pace_key, 'type', 'is not a string') end
  if praw and (#praw == 16 or #praw == 32) then
    local b, a = struct.unpack('<i8i8', praw)
    -- a balance out of range (or a key of another length) is none, as budget.lua reads it; a debt
    -- (negative) is kept. (Grants an older SDK made since budget.lua's last call are not read here.)
    if b >= -9000000000000 and b <= 9007199254740992 and a >= 0 then balance, pace_at = b, a end
  end
end
local exists = ((cfg[1] or cfg[2] or cfg[3] or cfg[4]) and 1 or 0) + (raw and 1 or 0)

local requests, retries, denied, active = 0, 0, 0, 0
local oldest = nil -- the oldest bucket in the window with first attempts (pace_span)
if w and w[1] == bucket_ms then
  for i = 0, RING - 1 do
    local b = 2 + i * FIELDS
    local stamp = w[b]
    if not trust_slot_ok(w[b + 1], w[b + 2], w[b + 3], w[b + 4], w[b + 5], trust_bucket_cap(bucket_ms)) then
      stamp = 0 -- broken: counted as empty (budget.lua overwrites it when its bucket comes round)
    end
    if stamp > cur - BUCKETS and stamp <= cur then
      if w[b + 1] > 0 and (oldest == nil or stamp < oldest) then oldest = stamp end
      requests = requests + w[b + 1]
      retries = retries + w[b + 2]
      denied = denied + w[b + 3]
      active = active + w[b + 4]
    elseif stamp == cur - BUCKETS then
      requests = requests + math.floor(w[b + 1] * inside_ms / bucket_ms)
      denied = denied + math.floor(w[b + 3] * inside_ms / bucket_ms)
      if w[b + 1] > 0 then oldest = stamp end
      if w[b + 5] > now_ms - window_s * 1000 then
        retries = retries + w[b + 2]
      end
    end
  end
end

local allowance = math.floor(requests / 1000000) * ratio_ppm
    + math.floor((requests % 1000000) * ratio_ppm / 1000000) + min_rps * window_s
-- fractions travel as strings: Redis truncates Lua numbers to integers
local retry_ratio = '0'
if requests > 0 then retry_ratio = string.format('%.6f', retries / requests) end

-- permits grantable now: the balance brought up to now (the floor's refill; no deposits), as the
-- next budget.lua call would see it before its own counts
local refill = pace_rate(requests, pace_span(oldest, cur, now_ms, bucket_ms, window_s * 1000), ratio_ppm, min_rps)
local cap = pace_cap(refill)
if balance == nil then
  balance = pace_start(requests, window_s, ratio_ppm, min_rps, cap)
else
  balance = pace_refill(balance, pace_at, now_ms, 0, ratio_ppm, min_rps, cap)
end

-- the fleet's size as budget.lua counts it (per epoch, from the clients hash); without that key (an
-- older caller) the clients counted in the window's buckets
if cli_key then
  local record = redis.pcall('HGET', cli_key, '')
  if type(record) == 'table' and record.err then return broken(cli_key, 'type', 'is not a hash') end
  local n, p = fleet_read(record or nil, math.floor(now_ms / FLEET_MS))
  active = math.max(n, p)
end

local reply = { exists, requests, retries, denied, allowance, active, ratio_ppm, window_s, min_rps, mode, retry_ratio,
    src, math.max(0, math.floor(balance / PPM)), pace_next_ms(balance, refill), refill, max_calls }
-- ARGV[6] = 'buckets': append, as the last element, the window bucket by bucket (oldest first):
-- { bucket_ms, now_ms, then start_ms, requests, retries, denied for each of the 10 buckets }
if ARGV[6] == 'buckets' then
  local per = { bucket_ms, now_ms }
  for k = cur - BUCKETS + 1, cur do
    local q, g, d = 0, 0, 0
    if w and w[1] == bucket_ms then
      local b = 2 + (k % RING) * FIELDS
      if w[b] == k then q, g, d = w[b + 1], w[b + 2], w[b + 3] end
    end
    per[#per + 1] = k * bucket_ms
    per[#per + 1] = q
    per[#per + 1] = g
    per[#per + 1] = d
  end
  reply[#reply + 1] = per
end
return reply
