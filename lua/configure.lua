-- configure.lua: set a budget's configuration. Fields given as '' keep their stored value (or take
-- the default given when none is stored). Validated here too, so no client can store a bad value.
-- Marks the configuration as set (src = set): a seed from a client never counts as set.
-- Documented in lua/README.md (KEYS, ARGV, reply).
local CONFIG_TTL_MS = 7 * 24 * 3600 * 1000
local cfg_key, idx_key = KEYS[1], KEYS[2]
local names = { 'ratio_ppm', 'window_s', 'min_rps', 'mode', 'max_calls_per_s' }

local function in_range(v, lo, hi)
  return v ~= nil and v == v and v >= lo and v <= hi and v == math.floor(v)
end

local current = redis.pcall('HMGET', cfg_key, unpack(names))
if current.err then
  return redis.error_reply('ERR broken key=' .. cfg_key .. ' field=type is not a hash')
end
local value, from_store = {}, {}
-- ARGV[1..4]: ratio_ppm, window_s, min_rps, mode; ARGV[5..8] their defaults; ARGV[9] max_calls_per_s
-- and ARGV[10] its default (both optional, for callers of an older SDK: then 2000)
local given = { ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[9] }
local defaults = { ARGV[5], ARGV[6], ARGV[7], ARGV[8], ARGV[10] or '2000' }
if defaults[5] == '' then defaults[5] = '2000' end
for i = 1, 5 do
  if given[i] ~= nil and given[i] ~= '' then
    value[i] = given[i]
  elseif current[i] then
    value[i] = current[i]
    from_store[i] = true
  else
    value[i] = defaults[i]
  end
end
-- a kept stored value that is bad is the store's fault, not the caller's: say which
local function bad(i, why)
  if from_store[i] then
    return redis.error_reply('ERR broken key=' .. cfg_key .. ' field=' .. names[i] .. ' ' .. why)
  end
  return redis.error_reply('ERR invalid ' .. names[i])
end
local ratio_ppm, window_s, min_rps = tonumber(value[1]), tonumber(value[2]), tonumber(value[3])
if not in_range(ratio_ppm, 1, 1000000) then return bad(1, 'must be an integer in [1, 1000000]') end
if not in_range(window_s, 1, 3600) then return bad(2, 'must be an integer in [1, 3600]') end
if not in_range(min_rps, 0, 1000000) then return bad(3, 'must be an integer in [0, 1000000]') end
if value[4] ~= 'enforce' and value[4] ~= 'shadow' then return bad(4, 'must be enforce or shadow') end
local max_calls = tonumber(value[5])
if not in_range(max_calls, 1, 1000000) then return bad(5, 'must be an integer in [1, 1000000]') end
local budget_name = string.match(cfg_key, '^rb:v2:{(.+)}:cfg$') or cfg_key
local listed = redis.pcall('ZSCORE', idx_key, budget_name)
if type(listed) == 'table' and listed.err then
  return redis.error_reply('ERR broken key=' .. idx_key .. ' field=type is not a sorted set')
end

local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', cfg_key, 'ratio_ppm', string.format('%d', ratio_ppm), 'window_s', string.format('%d', window_s),
    'min_rps', string.format('%d', min_rps), 'mode', value[4], 'src', 'set',
    'max_calls_per_s', string.format('%d', max_calls))
redis.call('PEXPIRE', cfg_key, CONFIG_TTL_MS)
redis.call('ZADD', idx_key, now_ms + CONFIG_TTL_MS, budget_name)
redis.call('PEXPIRE', idx_key, CONFIG_TTL_MS)
return { ratio_ppm, window_s, min_rps, value[4], max_calls }
