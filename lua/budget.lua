-- budget.lua: count first attempts and local refusals, and decide on extra-attempt permits, in
-- one atomic step. Documented in lua/README.md (KEYS, ARGV, reply).
--
-- Paced admission: a permit is granted from a balance (the budget's `pace` key) into which every
-- first attempt deposits `ratio` permits and the floor `min_rps` permits a second, capped at half a
-- second of those deposits at the window's rate. So retries follow the request *rate*: never a
-- whole window's allowance spent in one burst followed by seconds of nothing.
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
-- The fleet is counted per epoch of FLEET_MS, whatever the window: each client once per epoch, and
-- the estimate is the clients of this epoch and the last one together. An epoch outlasts the longest
-- wait between a live client's calls (its stretched flush interval: at most 1.25 x 60 s), so every
-- live client is in the last epoch's count, and no boundary (of a bucket, a window or an epoch) and
-- no change of window_s drops clients from the estimate. lua/README.md, "The fleet's size".
local FLEET_MS = 120000
local CONFIG_TTL_MS = 7 * 24 * 3600 * 1000

local DEFAULT_MAX_CALLS = 2000
-- the deepest debt the balance holds (micro-permits): keeps (PPM - balance) * 1000 exact
local MAX_DEBT = 9000000000000
local cfg_key, win_key, cli_key, idx_key, pace_key = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
if pace_key == nil then return redis.error_reply('ERR invalid keys: 5 expected') end

-- The rules budget.lua and status.lua share, one text each in lua/fragments/: a line
-- "--#include NAME" stands for that file's text (lua/README.md, "Fragments").
--#include pace.lua
--#include trust.lua
--#include fleet.lua

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
-- ARGV[12] (optional): retries the client granted from its fallback while Redis did not answer
local add_retries = 0
if ARGV[12] ~= nil and ARGV[12] ~= '' then
  add_retries = int(12)
  if add_retries == nil then return redis.error_reply('ERR invalid retries') end
end
-- ARGV[13] (optional): options, comma-separated; a token this script does not know is ignored (a
-- newer caller's, or one a relay reads: 'first=<n>', 'hold').
-- 'again' marks a call of unknown fate sent again with its own number: it is applied only while this
-- client's entry (its last number) is held, so a copy that arrives after the entry was cleaned up (its
-- client silent for two fleet epochs) is never applied a second time.
-- 'through=<k>' (a relay's own call, k >= 1): every batch of its clients' reports numbered up to k is
-- in this call or in one of its calls applied before ("Held counts" below).
local again, through = false, nil
for opt in string.gmatch(ARGV[13] or '', '[^,]+') do
  if opt == 'again' then
    again = true
  elseif opt == 'through' or string.sub(opt, 1, 8) == 'through=' then
    local k = tonumber(string.match(opt, '^through=(%d+)$'))
    if through ~= nil or k == nil or k < 1 or k > 9007199254740992 then
      return redis.error_reply('ERR invalid through')
    end
    through = k
  end
end
-- ARGV[14..] (optional): up to 8 groups of 4, the number and counts (first attempts, denied,
-- retries) of calls of this client's on this way whose fate it does not know (a timeout, a connection
-- lost with the call in flight), carried by this later call, in increasing number order. Each is added
-- only while the client's entry is held with a last number below its own: a client's numbers only
-- grow on one way, so that call never ran, and should it arrive later it is stale. Without an entry
-- they stay lost. A group carried again (its first carrier's fate unknown too) is never added twice:
-- a carrier that ran raised the last number past it.
-- The groups end at the first element that starts with 'held=': from there on every element is a
-- held item (below).
local held_at = #ARGV + 1
for i = 14, #ARGV do
  if string.sub(ARGV[i], 1, 5) == 'held=' then
    held_at = i
    break
  end
end
local doubts = {}
if held_at > 14 and ARGV[14] ~= '' then
  local groups = (held_at - 14) / 4
  if groups ~= math.floor(groups) or groups > 8 or client_id == '' then
    return redis.error_reply('ERR invalid doubt_seq')
  end
  local below = 0
  for g = 0, groups - 1 do
    local d_seq = int(14 + 4 * g)
    if d_seq == nil or d_seq <= below or d_seq >= seq then return redis.error_reply('ERR invalid doubt_seq') end
    local d_req, d_den, d_ret = int(15 + 4 * g), int(16 + 4 * g), int(17 + 4 * g)
    if d_req == nil or d_den == nil or d_ret == nil then return redis.error_reply('ERR invalid doubt counts') end
    doubts[#doubts + 1] = { d_seq, d_req, d_den, d_ret }
    below = d_seq
  end
end
-- Held items, 'held=<relay>,<k>,<client>,<q>,<d>,<r>[,<p>]': the counts (first attempts, denied,
-- retries) that client reported into batch k of a relay that may have died before its call with that
-- batch was applied, carried by this call (the client's own, or another relay's); p (default 1) numbers
-- the parts of one batch a client carries at different times (it reported into the batch again after
-- carrying a part). Each is added only if that relay's calls never applied batch k, and once; the
-- relay, should it apply the batch later, takes a credit of them off its call ("Held counts" below;
-- lua/README.md). At most MAX_HELD.
local MAX_HELD = 256
-- an item's batch is at most this far beyond its relay's applied `through`
local MAX_AHEAD = 1000
local held = {}
if held_at <= #ARGV then
  if #ARGV - held_at + 1 > MAX_HELD then return redis.error_reply('ERR invalid held') end
  for i = held_at, #ARGV do
    local relay, k, client, q, d, r, p = string.match(ARGV[i],
        '^held=([%w._-]+),(%d+),([%w._-]+),(%d+),(%d+),(%d+),?(%d*)$')
    if relay == nil then return redis.error_reply('ERR invalid held') end
    k, q, d, r, p = tonumber(k), tonumber(q), tonumber(d), tonumber(r), (p == '' and 1 or tonumber(p))
    if #relay > 100 or #client > 100 or k < 1 or p < 1 or math.max(k, q, d, r, p) > 9007199254740992 then
      return redis.error_reply('ERR invalid held')
    end
    held[#held + 1] = { relay, k, client, q, d, r, p }
  end
end
-- ARGV[7..10]: the seed; ARGV[7] = '' means "do not seed" (reply `missing` when none is stored)
local may_seed = ARGV[7] ~= nil and ARGV[7] ~= ''
if may_seed then
  if not in_range(tonumber(ARGV[7]), 1, 1000000) then return redis.error_reply('ERR invalid seed ratio_ppm') end
  if not in_range(tonumber(ARGV[8]), 1, 3600) then return redis.error_reply('ERR invalid seed window_s') end
  if not in_range(tonumber(ARGV[9]), 0, 1000000) then return redis.error_reply('ERR invalid seed min_rps') end
  if ARGV[10] ~= 'enforce' and ARGV[10] ~= 'shadow' then return redis.error_reply('ERR invalid seed mode') end
  if ARGV[11] ~= nil and ARGV[11] ~= '' and not in_range(tonumber(ARGV[11]), 1, 1000000) then
    return redis.error_reply('ERR invalid seed max_calls_per_s')
  end
end

-- Every read first (each one checks the key's type), every write after: nothing is half-written.
local names = { 'ratio_ppm', 'window_s', 'min_rps', 'mode', 'src', 'max_calls_per_s' }
local cfg = redis.pcall('HMGET', cfg_key, unpack(names))
if cfg.err then return broken(cfg_key, 'type', 'is not a hash') end
local stored = cfg[1] or cfg[2] or cfg[3] or cfg[4]
if not stored and not may_seed then
  return { 'missing', 0, 0, 0, 0, 0, 0, 0, 0, 0, '', 0, -1, 0, 0 }
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
-- max_calls_per_s came later: a configuration stored without it reads as the default; a seed stores
-- it only with a new configuration (never into one someone else wrote)
if not cfg[6] and not stored and may_seed and ARGV[11] ~= nil and ARGV[11] ~= '' then
  cfg[6] = ARGV[11]
  seed_fields[#seed_fields + 1] = 'max_calls_per_s'
  seed_fields[#seed_fields + 1] = cfg[6]
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
local max_calls = DEFAULT_MAX_CALLS
if cfg[6] then
  max_calls = tonumber(cfg[6])
  if not in_range(max_calls, 1, 1000000) then return broken(cfg_key, 'max_calls_per_s', 'must be an integer in [1, 1000000]') end
end

-- Redis's clock, so skewed client clocks do not matter.
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local bucket_ms = window_s * 1000 / BUCKETS

-- The trust model (lua/README.md): what one call reports counts up to `call_cap`, a bucket holds at
-- most `bucket_cap` of each count (the most the pace rule counts: 10^9 first attempts a second), and
-- every sum saturates there, so no report overflows or inflates a budget past that and no later call
-- meets a broken count. A slot that holds one anyway (negative, over the cap) counts as empty and is
-- overwritten when its bucket comes round.
local call_cap = trust_call_cap(max_calls)
local bucket_cap = trust_bucket_cap(bucket_ms)
add_requests = math.min(add_requests, call_cap)
add_denied = math.min(add_denied, call_cap)
add_retries = math.min(add_retries, call_cap)
want = math.min(want, call_cap)
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
local oldest = nil -- the oldest bucket in the window with first attempts (pace_span)
local cq, cg, cd, ca, cl = 0, 0, 0, 0, 0
local live = false -- the current bucket already holds data (so the keys' TTLs were set in it)
if not fresh then
  for i = 0, RING - 1 do
    local b = 2 + i * FIELDS
    local stamp = w[b]
    if not trust_slot_ok(w[b + 1], w[b + 2], w[b + 3], w[b + 4], w[b + 5], bucket_cap) then
      stamp = 0 -- broken: counted as empty, and overwritten when its bucket comes round
    end
    if stamp > cur - BUCKETS and stamp <= cur then
      local q, g, d, a = w[b + 1], w[b + 2], w[b + 3], w[b + 4]
      if q > 0 and (oldest == nil or stamp < oldest) then oldest = stamp end
      requests = requests + q
      retries = retries + g
      denied = denied + d
      if i == slot and stamp == cur then
        cq, cg, cd, ca, cl = q, g, d, a, w[b + 5]
        live = true
      end
    elseif stamp == cur - BUCKETS then
      -- the leaving bucket: first attempts and denials by the share still inside, rounded down;
      -- grants in full while its last grant is less than one window old (the safe side)
      requests = requests + math.floor(w[b + 1] * inside_ms / bucket_ms)
      denied = denied + math.floor(w[b + 3] * inside_ms / bucket_ms)
      if w[b + 1] > 0 then oldest = stamp end
      if w[b + 5] > now_ms - window_ms then
        retries = retries + w[b + 2]
      end
    end
  end
end

-- The paced balance: 32 bytes, micro-permits (negative: a debt), the Redis ms it was last brought up
-- to date, and the bucket this script last wrote with the grants that bucket held after the write
-- (16 bytes, as written before: no bucket). Grants in the ring beyond those were made by an older
-- SDK's window rule on the same keys; they are paid from the balance ("Mixed versions").
local praw = redis.pcall('GET', pace_key)
if type(praw) == 'table' and praw.err then return broken(pace_key, 'type', 'is not a string') end
local balance, pace_at, paid_bucket, paid_grants = nil, now_ms, nil, 0
if praw and (#praw == 16 or #praw == 32) then
  local b, a, pb, pg = struct.unpack(#praw == 32 and '<i8i8i8i8' or '<i8i8', praw)
  -- a balance out of range (or a key of another length) is none: the budget starts a new one
  if b >= -MAX_DEBT and b <= 9007199254740992 and a >= 0 then balance, pace_at = b, a end
  if #praw == 32 and pg >= 0 then paid_bucket, paid_grants = pb, pg end
end
-- grants in the ring that this script did not make: those in the bucket it last wrote beyond what it
-- left there, and every grant of the buckets since (only an older SDK writes without this key)
local foreign = 0
if not fresh and paid_bucket and paid_bucket <= cur and paid_bucket >= cur - BUCKETS then
  for i = 0, RING - 1 do
    local b = 2 + i * FIELDS
    if w[b] >= paid_bucket and w[b] <= cur and trust_slot_ok(w[b + 1], w[b + 2], w[b + 3], w[b + 4], w[b + 5], bucket_cap) then
      foreign = foreign + w[b + 2]
    end
  end
  foreign = math.max(0, foreign - paid_grants)
end

-- The index of budget names (a sorted set: name -> when its configuration expires, Redis ms), so
-- a listing reads it instead of scanning every key. Read here (type check) before any write.
local budget_name = string.match(cfg_key, '^rb:v2:{(.+)}:cfg$') or cfg_key
local listed = redis.pcall('ZSCORE', idx_key, budget_name)
if type(listed) == 'table' and listed.err then return broken(idx_key, 'type', 'is not a sorted set') end

-- De-duplication: a client numbers its calls; a call it already gave up on and that arrives again
-- (a replay after a reconnect) or late is not applied twice. Its entry: `<last seq>:<fleet epoch it
-- was last counted in>`; a relay's (a caller that sends 'through', or one a held item names) may go on
-- `:<through>` and credits `:<k>/<q>/<d>/<r>` ("Held counts" below).
-- Fleet size: the field '' of the same hash (never a client id: '' turns counting off) holds
-- `<epoch>:<clients counted in it>:<clients counted in the epoch before, and those new in this one>`.
-- A client is counted once in each epoch it calls in, in the second count too when it was not in the
-- epoch before (fleet_new); the estimate is the larger of the two counts (the second, but for records
-- an older SDK wrote), so a live client (one call per epoch at least) never drops out of it, at an
-- epoch's start or when window_s changes, and a fleet that starts as an epoch ends is counted whole:
-- the larger of its two parts, before, let its clients flush up to twice as often as the ceiling allows.
-- Entries stamped ahead of Redis's clock (written before a failover to a replica whose clock is
-- behind, or by an older SDK in bucket numbers) are counted again in the current epoch, and the
-- record's counts are carried into it as the epoch before, so the estimate does not fall either.
--
-- Held counts. A relay sums its clients' reports into numbered batches and sends them in its own
-- calls, each with every count it holds and 'through=<k>', k its current batch; a client keeps what it
-- reported into batch k until the relay tells it the batch is settled, and if the relay dies first
-- carries it as a held item (relay, k, client, counts). The relay's entry keeps `through` T, the
-- highest k its applied calls told. An item is added only while T < k (that batch never applied) and
-- its (relay, client) record holds no batch k or later (never carried before); it then leaves a
-- credit of what it added, per k, in the relay's entry, and the relay's call that brings T to k or past
-- it takes its credits up to T off its own counts. So each batch counts once, whoever brings it.
local MAX_CREDITS = 64
local MAX_COUNT = 9007199254740992
-- a client entry `<last>:<epoch>[:<through>[:<k>/<q>/<d>/<r>]...]` (credits in increasing k), or nil
-- when the value is not of this form (read as no entry)
local function entry_read(v)
  if not v then return nil end
  local last, ep, rest = string.match(v, '^(%d+):(%d+)(.*)$')
  if last == nil then return nil end
  local e = { last = tonumber(last), epoch = tonumber(ep), through = 0, credits = {} }
  if rest == '' then return e end
  local t, pos = string.match(rest, '^:(%d+)()')
  e.through = tonumber(t)
  if e.through == nil or e.through > MAX_COUNT then return nil end
  local below = 0
  while pos <= #rest do
    local k, q, d, r, nxt = string.match(rest, '^:(%d+)/(%d+)/(%d+)/(%d+)()', pos)
    k, q, d, r = tonumber(k), tonumber(q), tonumber(d), tonumber(r)
    if k == nil or k <= below or math.max(k, q, d, r) > MAX_COUNT then return nil end
    e.credits[#e.credits + 1] = { k, q, d, r }
    below, pos = k, nxt
  end
  return e
end
-- the short form whenever there is no through and no credit: a client's entry as it always was
local function entry_text(last, ep, t, credits)
  if t == 0 and #credits == 0 then return string.format('%d:%d', last, ep) end
  local parts = { string.format('%d:%d:%d', last, ep, t) }
  for i = 1, #credits do
    local c = credits[i]
    parts[#parts + 1] = string.format('%d/%d/%d/%d', c[1], c[2], c[3], c[4])
  end
  return table.concat(parts, ':')
end

local epoch = math.floor(now_ms / FLEET_MS)
-- one HMGET: the fleet record, the caller's entry, and each entry and record a held item reads
local fields = { '' }
local at = { [''] = 1 }
local function want_field(f)
  if at[f] == nil then
    fields[#fields + 1] = f
    at[f] = #fields
  end
end
if client_id ~= '' then want_field(client_id) end
for i = 1, #held do
  if held[i][1] ~= client_id then
    want_field(held[i][1])
    want_field(held[i][1] .. '|' .. held[i][3])
  end
end
local cli = redis.pcall('HMGET', cli_key, unpack(fields))
if cli.err then return broken(cli_key, 'type', 'is not a hash') end
local fleet_now, fleet_before, fleet_kept = fleet_read(cli[1], epoch)
local fleet_changed = not fleet_kept
local count_client = false
local client_entry = nil
if client_id ~= '' then
  local last_seq, counted = 0, nil
  -- (an entry that is not of this form is read as a new client's)
  local own = entry_read(cli[at[client_id]])
  if own then last_seq, counted = own.last, own.epoch end
  -- (an entry a held item made, last number 0, was never counted in the fleet)
  if last_seq == 0 then counted = nil end
  -- `again` needs the entry its first copy would have written: one a held item made (last number 0)
  -- is not that (the entry may have been evicted after the first copy ran), so the copy is stale
  if seq <= last_seq or (again and last_seq == 0) then
    local allowance_now = math.floor(requests / 1000000) * ratio_ppm
        + math.floor((requests % 1000000) * ratio_ppm / 1000000) + min_rps * window_s
    local refill_now = pace_rate(requests, pace_span(oldest, cur, now_ms, bucket_ms, window_ms), ratio_ppm, min_rps)
    local cap_now = pace_cap(refill_now)
    local bal_now = pace_start(requests, window_s, ratio_ppm, min_rps, cap_now)
    if balance then bal_now = pace_refill(balance, pace_at, now_ms, 0, ratio_ppm, min_rps, cap_now) end
    return { 'stale', 0, requests, retries, denied, allowance_now, math.max(fleet_now, fleet_before), ratio_ppm,
        window_s, min_rps, mode, math.max(0, math.floor(bal_now / PPM)), pace_next_ms(bal_now, refill_now), refill_now,
        max_calls }
  end
  if counted ~= epoch then
    count_client = true
    fleet_now = trust_add(fleet_now, 1, bucket_cap)
    if fleet_new(counted, epoch) then fleet_before = trust_add(fleet_before, 1, bucket_cap) end
    fleet_changed = true
  end
  for i = 1, #doubts do
    local d = doubts[i]
    if own and last_seq < d[1] then
      -- (what one call reports is capped: the carried counts and this call's together)
      add_requests = math.min(add_requests + math.min(d[2], call_cap), call_cap)
      add_denied = math.min(add_denied + math.min(d[3], call_cap), call_cap)
      add_retries = math.min(add_retries + math.min(d[4], call_cap), call_cap)
    end
  end
  -- a relay's own call: its batches up to `through` are counted now (by this call or one before), so
  -- the credits of those batches, counts its clients' held items added already, come off this call's
  local own_through, credits = 0, {}
  if own then own_through, credits = own.through, own.credits end
  if through then
    if through > own_through then own_through = through end
    local kept = {}
    for i = 1, #credits do
      local c = credits[i]
      if c[1] <= own_through then
        -- what this call cannot pay stays credited, for its next calls: a batch holds the counts of its
        -- credit, so only a credit made from a lower bound of the batch (a client's call of unknown fate)
        -- can outrun one call's counts; its counts come later, and taking them off then is exact
        local q, d, r = math.min(add_requests, c[2]), math.min(add_denied, c[3]), math.min(add_retries, c[4])
        add_requests, add_denied, add_retries = add_requests - q, add_denied - d, add_retries - r
        if q < c[2] or d < c[3] or r < c[4] then kept[#kept + 1] = { c[1], c[2] - q, c[3] - d, c[4] - r } end
      else
        kept[#kept + 1] = c
      end
    end
    credits = kept
  end
  client_entry = entry_text(seq, epoch, own_through, credits)
end
-- Held items, in order, once this call is applied (a stale one returned above, applying none): each
-- added unless it names the caller itself (its own calls bring its batches), was carried before (its
-- record `<relay>|<client>` = `<k>:<epoch>[:<p>]` holds (k, p) or later), or its relay applied the batch (through
-- >= k); then credited to the relay's entry (made `0:<epoch>:0` if there is none). A relay with
-- MAX_CREDITS credits takes no new batch's: that item is dropped, nothing added (losing is the safe side).
local relays, relay_order = {}, {}
local carried, carried_order = {}, {}
for i = 1, #held do
  local h = held[i]
  local relay, k = h[1], h[2]
  if relay ~= client_id then
    local record = relay .. '|' .. h[3]
    if carried[record] == nil then
      local rk, rp = string.match(cli[at[record]] or '', '^(%d+):%d+:?(%d*)$')
      carried[record] = { tonumber(rk) or 0, false, (rp == nil or rp == '') and 1 or tonumber(rp) }
    end
    local e = relays[relay]
    if e == nil then
      e = entry_read(cli[at[relay]]) or { last = 0, epoch = epoch, through = 0, credits = {} }
      relays[relay] = e
    end
    local was = carried[record]
    -- (an item of no count, or of a batch far beyond what the relay applied, is no relay's: a batch
    -- lies at most a few calls ahead of the last applied one; such items would only fill its credits)
    local counts = h[4] > 0 or h[5] > 0 or h[6] > 0
    if counts and k <= e.through + MAX_AHEAD and (was[1] < k or (was[1] == k and was[3] < h[7])) and e.through < k then
      local c, pos = nil, #e.credits + 1
      for j = 1, #e.credits do
        if e.credits[j][1] == k then c = e.credits[j] break end
        if e.credits[j][1] > k then pos = j break end
      end
      if c or #e.credits < MAX_CREDITS then
        -- (capped, with this call's own counts, at what one call may report; the credit is what was added)
        local q = math.min(add_requests + math.min(h[4], call_cap), call_cap) - add_requests
        local d = math.min(add_denied + math.min(h[5], call_cap), call_cap) - add_denied
        local r = math.min(add_retries + math.min(h[6], call_cap), call_cap) - add_retries
        add_requests, add_denied, add_retries = add_requests + q, add_denied + d, add_retries + r
        if c then
          c[2], c[3], c[4] = math.min(c[2] + q, call_cap), math.min(c[3] + d, call_cap), math.min(c[4] + r, call_cap)
        else
          table.insert(e.credits, pos, { k, q, d, r })
        end
        if not e.changed then
          e.changed = true
          relay_order[#relay_order + 1] = relay
        end
        if not carried[record][2] then carried_order[#carried_order + 1] = record end
        carried[record] = { k, true, h[7] }
      end
    end
  end
end
active = math.max(fleet_now, fleet_before)
local writes = {}
if client_entry then
  writes[1], writes[2] = client_id, client_entry
  if fleet_changed then
    writes[3], writes[4] = '', string.format('%d:%d:%d', epoch, fleet_now, fleet_before)
  end
end
for i = 1, #relay_order do
  local e = relays[relay_order[i]]
  writes[#writes + 1] = relay_order[i]
  writes[#writes + 1] = entry_text(e.last, e.epoch, e.through, e.credits)
end
for i = 1, #carried_order do
  writes[#writes + 1] = carried_order[i]
  local c = carried[carried_order[i]]
  writes[#writes + 1] = c[3] > 1 and string.format('%d:%d:%d', c[1], epoch, c[3]) or string.format('%d:%d', c[1], epoch)
end
if #writes > 0 then redis.call('HSET', cli_key, unpack(writes)) end
if count_client then
  -- bounded clean-up of clients gone quiet for two epochs, a couple each time a client is counted
  -- (a relay's long entry and an item's record alike)
  local sample = redis.call('HRANDFIELD', cli_key, 2, 'WITHVALUES')
  for i = 1, #sample, 2 do
    local seen = tonumber(string.match(sample[i + 1], '^%d+:(%d+)$') or string.match(sample[i + 1], '^%d+:(%d+):'))
    if sample[i] ~= '' and seen ~= nil and seen < epoch - 2 then redis.call('HDEL', cli_key, sample[i]) end
  end
end
if count_client or #relay_order > 0 then
  -- once per epoch per client is enough to keep the table alive for three epochs (and items may write
  -- it for a caller that is counted nowhere)
  redis.call('PEXPIRE', cli_key, math.max(window_s * 1000 * CLIENT_TTL_WINDOWS, 3 * FLEET_MS))
end

-- (a bucket's counts saturate at its cap: the window's sums take what the bucket took)
local q_was, d_was = cq, cd
cq = trust_add(cq, add_requests, bucket_cap)
cd = trust_add(cd, add_denied, bucket_cap)
add_requests = cq - q_was
requests = requests + add_requests
denied = denied + cd - d_was
if count_client then
  ca = trust_add(ca, 1, bucket_cap)
end

-- allowance = floor(ratio * requests) + floor_per_sec * window, in integers (ratio in ppm); split
-- so that ratio_ppm * requests never leaves the exact range of a double.
local allowance = math.floor(requests / 1000000) * ratio_ppm
    + math.floor((requests % 1000000) * ratio_ppm / 1000000) + min_rps * window_s
-- The decision is the paced balance's: the window's counts give its cap (the recent rate) and are
-- what status shows. A budget without a balance yet starts with what its window deposited.
if add_requests > 0 and oldest == nil then oldest = cur end
local refill = pace_rate(requests, pace_span(oldest, cur, now_ms, bucket_ms, window_ms), ratio_ppm, min_rps)
local cap = pace_cap(refill)
if balance == nil then
  balance = pace_start(requests, window_s, ratio_ppm, min_rps, cap) -- this call's first attempts included
else
  balance = pace_refill(balance, pace_at, now_ms, add_requests, ratio_ppm, min_rps, cap)
end
-- retries granted elsewhere (a client's fallback) were paid for by the first attempts this call
-- brings: spend them, as far as the balance holds, so those first attempts do not pay twice
-- grants an older SDK made on these keys are paid from the balance too, into a debt of at most a
-- window of the refill: the mixed fleet grants what the paced rule allows, not both rules' sum
if foreign > 0 then
  balance = math.max(balance - math.min(foreign, call_cap) * PPM, -math.min(MAX_DEBT, refill * window_s))
end
if add_retries > 0 and balance > 0 then
  balance = balance - math.min(balance, add_retries * PPM)
end
if add_retries > 0 then
  local g_was = cg
  cg = trust_add(cg, add_retries, bucket_cap)
  retries = retries + cg - g_was
end
local available = math.max(0, math.floor(balance / PPM))

local status, granted = 'counted', 0
if need > 0 then
  local d_was = cd
  if available >= need and need <= call_cap then
    status = 'granted'
    granted = math.min(want, available)
    balance = balance - granted * PPM
  elseif mode == 'shadow' and need <= call_cap then
    -- shadow: count what enforce would have refused, refuse nothing
    status = 'shadow'
    granted = need
    cd = trust_add(cd, need, bucket_cap)
  else
    -- (an ask above what one call may report is refused in either mode, and counts that many)
    status = 'denied'
    cd = trust_add(cd, math.min(need, call_cap), bucket_cap)
  end
  denied = denied + cd - d_was
end
local g_was = cg
cg = trust_add(cg, granted, bucket_cap)
retries = retries + cg - g_was
-- (grants a client's fallback made count as grants made now: they leave with the bucket they are in)
if granted > 0 or add_retries > 0 then cl = now_ms end

if seeded then redis.call('HSET', cfg_key, unpack(seed_fields)) end
redis.call('SET', pace_key, struct.pack('<i8i8i8i8', balance, now_ms, cur, cg), 'PX', window_ms * 2)
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

return { status, granted, requests, retries, denied, allowance, active, ratio_ppm, window_s, min_rps, mode,
    math.max(0, math.floor(balance / PPM)), pace_next_ms(balance, refill), refill, max_calls }
