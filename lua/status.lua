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

-- The rules budget.lua and status.lua share, one text each in lua/fragments/: a line
-- "--#include NAME" stands for that file's text (lua/README.md, "Fragments").
--#include pace.lua
--#include trust.lua
--#include fleet.lua

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
