-- budget.lua: count first attempts and local refusals, and decide on extra-attempt permits, in
-- one atomic step. Documented in lua/README.md (KEYS, ARGV, reply).
--
-- Bounded work per call: one GET of the ring, one SETRANGE of the current bucket, a few small
-- commands. No loops over individual requests, no sorted-set logs.

-- Redis 6.2 replicates scripts verbatim unless told otherwise, and then refuses writes after TIME.
-- On 7.x effects replication is the only mode and this call is a no-op.
if redis.replicate_commands then redis.replicate_commands() end

-- The window is 10 buckets; the ring keeps 11, so the bucket that is leaving the window still
-- counts for the part of it that lies inside: its first attempts weighted by the time left in the
-- current bucket, its grants in full until one window after the last grant made in it. So no
-- grant stops counting before one window has passed since it was made, even in a burst.
local BUCKETS = 10
local RING = 11
local CLIENT_TTL_WINDOWS = 6
local CONFIG_TTL_MS = 7 * 24 * 3600 * 1000

local cfg_key, win_key, cli_key, idx_key = KEYS[1], KEYS[2], KEYS[3], KEYS[4]

local function int(i)
  local v = tonumber(ARGV[i])
  if v == nil or v ~= v or v ~= math.floor(v) or v < 0 or v > 9007199254740992 then return nil end
  return v
end

-- a stored or seeded number: an integer (never NaN or infinite) in [lo, hi]
local function in_range(v, lo, hi)
  return v ~= nil and v == v and v >= lo and v <= hi and v == math.floor(v)
end

-- Bad state in Redis is answered, before anything is written, by an error naming key and field.
local function broken(key, field, why)
  return redis.error_reply('ERR broken key=' .. key .. ' field=' .. field .. ' ' .. why)
end

local client_id = ARGV[1] or ''
local seq = int(2)
local add_requests = int(3)
local add_denied = int(4)
local need = int(5)
local want = int(6)
if seq == nil then return redis.error_reply('ERR invalid seq') end
if add_requests == nil then return redis.error_reply('ERR invalid requests') end
if add_denied == nil then return redis.error_reply('ERR invalid denied') end
if need == nil then return redis.error_reply('ERR invalid need') end
if want == nil or want < need then return redis.error_reply('ERR invalid want') end
-- ARGV[7..10]: the seed; ARGV[7] = '' means "do not seed" (reply `missing` when none is stored)
local may_seed = ARGV[7] ~= nil and ARGV[7] ~= ''
if may_seed then
  if not in_range(tonumber(ARGV[7]), 1, 1000000) then return redis.error_reply('ERR invalid seed ratio_ppm') end
  if not in_range(tonumber(ARGV[8]), 1, 3600) then return redis.error_reply('ERR invalid seed window_s') end
  if not in_range(tonumber(ARGV[9]), 0, 1000000) then return redis.error_reply('ERR invalid seed min_rps') end
  if ARGV[10] ~= 'enforce' and ARGV[10] ~= 'shadow' then return redis.error_reply('ERR invalid seed mode') end
end

-- Every read first (each one checks the key's type), every write after: nothing is half-written.
local names = { 'ratio_ppm', 'window_s', 'min_rps', 'mode', 'src' }
local cfg = redis.pcall('HMGET', cfg_key, unpack(names))
if cfg.err then return broken(cfg_key, 'type', 'is not a hash') end
local stored = cfg[1] or cfg[2] or cfg[3] or cfg[4]
if not stored and not may_seed then
  return { 'missing', 0, 0, 0, 0, 0, 0, 0, 0, 0, '' }
end
-- Configuration beside the counters is authoritative; a client only seeds what is missing, and
-- marks what it seeded (src = seed) so that the coordinator's budgets file wins over it.
local seeded = false
local seed_fields = {}
for i = 1, 4 do
  if not cfg[i] then
    if not may_seed then return broken(cfg_key, names[i], 'is missing') end
    cfg[i] = ARGV[6 + i]
    seeded = true
    seed_fields[#seed_fields + 1] = names[i]
    seed_fields[#seed_fields + 1] = cfg[i]
  end
end
if seeded and not cfg[5] then
  seed_fields[#seed_fields + 1] = 'src'
  seed_fields[#seed_fields + 1] = 'seed'
end
local ratio_ppm = tonumber(cfg[1])
local window_s = tonumber(cfg[2])
local min_rps = tonumber(cfg[3])
local mode = cfg[4]
if not in_range(ratio_ppm, 1, 1000000) then return broken(cfg_key, 'ratio_ppm', 'must be an integer in [1, 1000000]') end
if not in_range(window_s, 1, 3600) then return broken(cfg_key, 'window_s', 'must be an integer in [1, 3600]') end
if not in_range(min_rps, 0, 1000000) then return broken(cfg_key, 'min_rps', 'must be an integer in [0, 1000000]') end
if mode ~= 'enforce' and mode ~= 'shadow' then return broken(cfg_key, 'mode', 'must be enforce or shadow') end
if cfg[5] and cfg[5] ~= 'seed' and cfg[5] ~= 'set' then return broken(cfg_key, 'src', 'must be seed or set') end

-- Redis's clock, so skewed client clocks do not matter.
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local bucket_ms = window_s * 1000 / BUCKETS
local cur = math.floor(now_ms / bucket_ms)
local slot = cur % RING
-- share of the oldest bucket still inside the window, as (bucket_ms - elapsed) / bucket_ms
local inside_ms = bucket_ms - (now_ms - cur * bucket_ms)

local window_ms = window_s * 1000
-- The ring is one string: the bucket length in ms, then 11 slots of six little-endian 64-bit
-- integers (t bucket number, q first attempts, g grants, d denied, a clients, l last grant ms).
-- One GET and one C-level unpack read it; one SETRANGE writes the current slot. (Layout 1 kept a
-- hash of 67 fields, and looking them up cost most of a call.)
local FIELDS = 6
local SLOT_BYTES = 48
local RING_FMT = '<' .. string.rep('i8', 1 + RING * FIELDS)
local raw = redis.pcall('GET', win_key)
if type(raw) == 'table' and raw.err then return broken(win_key, 'type', 'is not a string') end
local w
if raw and #raw == 8 + RING * SLOT_BYTES then w = { struct.unpack(RING_FMT, raw) } end
-- A changed window length makes the stored bucket numbers meaningless: start over.
local fresh = w == nil or w[1] ~= bucket_ms

local requests, retries, denied, active = 0, 0, 0, 0
local cq, cg, cd, ca, cl = 0, 0, 0, 0, 0
local live = false -- the current bucket already holds data (so the keys' TTLs were set in it)
if not fresh then
  for i = 0, RING - 1 do
    local b = 2 + i * FIELDS
    local stamp = w[b]
    if w[b + 1] < 0 or w[b + 2] < 0 or w[b + 3] < 0 or w[b + 4] < 0 or w[b + 5] < 0 then
      return broken(win_key, 'slot' .. i, 'holds a negative count')
    end
    if stamp > cur - BUCKETS and stamp <= cur then
      local q, g, d, a = w[b + 1], w[b + 2], w[b + 3], w[b + 4]
      requests = requests + q
      retries = retries + g
      denied = denied + d
      active = active + a
      if i == slot and stamp == cur then
        cq, cg, cd, ca, cl = q, g, d, a, w[b + 5]
        live = true
      end
    elseif stamp == cur - BUCKETS then
      -- the leaving bucket: first attempts and denials by the share still inside, rounded down;
      -- grants in full while its last grant is less than one window old (the safe side)
      requests = requests + math.floor(w[b + 1] * inside_ms / bucket_ms)
      denied = denied + math.floor(w[b + 3] * inside_ms / bucket_ms)
      if w[b + 5] > now_ms - window_ms then
        retries = retries + w[b + 2]
      end
    end
  end
end

-- The index of budget names (a sorted set: name -> when its configuration expires, Redis ms), so
-- a listing reads it instead of scanning every key. Read here (type check) before any write.
local budget_name = string.match(cfg_key, '^rb:v2:{(.+)}:cfg$') or cfg_key
local listed = redis.pcall('ZSCORE', idx_key, budget_name)
if type(listed) == 'table' and listed.err then return broken(idx_key, 'type', 'is not a sorted set') end

-- De-duplication: a client numbers its calls; a call it already gave up on and that arrives again
-- (a replay after a reconnect) or late is not applied twice.
-- Fleet size: each client is counted once per window, in the bucket where it was last counted
-- (`a<i>`); when that bucket leaves the window, its next call counts it again. So the sum of `a`
-- over the window is the number of clients heard from in it, whatever the bucket length.
local count_client = false
if client_id ~= '' then
  local prev = redis.pcall('HGET', cli_key, client_id)
  if type(prev) == 'table' and prev.err then return broken(cli_key, 'type', 'is not a hash') end
  local last_seq, counted = 0, -1
  if prev then
    local s, c = string.match(prev, '^(%d+):(%d+)$')
    if not s then return broken(cli_key, client_id, 'must be <seq>:<bucket>') end
    last_seq = tonumber(s)
    counted = tonumber(c)
  end
  if seq <= last_seq then
    local allowance_now = math.floor(requests / 1000000) * ratio_ppm
        + math.floor((requests % 1000000) * ratio_ppm / 1000000) + min_rps * window_s
    return { 'stale', 0, requests, retries, denied, allowance_now, active, ratio_ppm, window_s, min_rps, mode }
  end
  if counted <= cur - BUCKETS then
    count_client = true
    counted = cur
  end
  redis.call('HSET', cli_key, client_id, string.format('%d:%d', seq, counted))
  if count_client then
    -- bounded clean-up of clients gone quiet, a couple each time a client is counted
    local sample = redis.call('HRANDFIELD', cli_key, 2, 'WITHVALUES')
    for i = 1, #sample, 2 do
      local v = sample[i + 1]
      local sep = string.find(v, ':', 1, true)
      local seen = sep and tonumber(string.sub(v, sep + 1)) or 0
      if seen < cur - CLIENT_TTL_WINDOWS * BUCKETS then redis.call('HDEL', cli_key, sample[i]) end
    end
    -- once per window per client is enough to keep the table alive for 6 windows
    redis.call('PEXPIRE', cli_key, window_s * 1000 * CLIENT_TTL_WINDOWS)
  end
end

requests = requests + add_requests
denied = denied + add_denied
cq = cq + add_requests
cd = cd + add_denied
if count_client then
  ca = ca + 1
  active = active + 1
end

-- allowance = floor(ratio * requests) + floor_per_sec * window, in integers (ratio in ppm); split
-- so that ratio_ppm * requests never leaves the exact range of a double.
local allowance = math.floor(requests / 1000000) * ratio_ppm
    + math.floor((requests % 1000000) * ratio_ppm / 1000000) + min_rps * window_s
local available = allowance - retries
if available < 0 then available = 0 end

local status, granted = 'counted', 0
if need > 0 then
  if available >= need then
    status = 'granted'
    granted = math.min(want, available)
  elseif mode == 'shadow' then
    -- shadow: count what enforce would have refused, refuse nothing
    status = 'shadow'
    granted = need
    denied = denied + need
    cd = cd + need
  else
    status = 'denied'
    denied = denied + need
    cd = cd + need
  end
end
retries = retries + granted
cg = cg + granted
if granted > 0 then cl = now_ms end

if seeded then redis.call('HSET', cfg_key, unpack(seed_fields)) end
local bucket = struct.pack('<i8i8i8i8i8i8', cur, cq, cg, cd, ca, cl)
if fresh then
  -- new or re-windowed: every other slot starts empty (bucket number 0 is never in the window)
  redis.call('SET', win_key, struct.pack('<i8', bucket_ms) .. string.rep('\0', SLOT_BYTES * slot) .. bucket
      .. string.rep('\0', SLOT_BYTES * (RING - 1 - slot)))
else
  redis.call('SETRANGE', win_key, 8 + SLOT_BYTES * slot, bucket)
end
-- TTLs are refreshed when a bucket starts (or the config is seeded): at least every window / 10,
-- far more often than they can run out, and not on every call
if not live or seeded or not listed then
  redis.call('PEXPIRE', win_key, window_s * 1000 * 2)
  redis.call('PEXPIRE', cfg_key, CONFIG_TTL_MS)
  -- the index entry lives as long as the configuration; names expired from it are dropped
  redis.call('ZADD', idx_key, now_ms + CONFIG_TTL_MS, budget_name)
  redis.call('ZREMRANGEBYSCORE', idx_key, '-inf', now_ms)
  redis.call('PEXPIRE', idx_key, CONFIG_TTL_MS)
end

return { status, granted, requests, retries, denied, allowance, active, ratio_ppm, window_s, min_rps, mode }
