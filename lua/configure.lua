-- configure.lua: set a budget's configuration. Fields given as '' keep their stored value (or take
-- the default given when none is stored). Validated here too, so no client can store a bad value.
-- Marks the configuration as set (src = set): a seed from a client never counts as set.
-- Documented in lua/README.md (KEYS, ARGV, reply).
local CONFIG_TTL_MS = 7 * 24 * 3600 * 1000
local cfg_key, idx_key = KEYS[1], KEYS[2]
local names = { 'ratio_ppm', 'window_s', 'min_rps', 'mode' }

local function in_range(v, lo, hi)
  return v ~= nil and v == v and v >= lo and v <= hi and v == math.floor(v)
end

local current = redis.pcall('HMGET', cfg_key, unpack(names))
if current.err then
  return redis.error_reply('ERR broken key=' .. cfg_key .. ' field=type is not a hash')
end
local value, from_store = {}, {}
for i = 1, 4 do
  if ARGV[i] ~= nil and ARGV[i] ~= '' then
    value[i] = ARGV[i]
  elseif current[i] then
    value[i] = current[i]
    from_store[i] = true
  else
    value[i] = ARGV[4 + i]
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
local budget_name = string.match(cfg_key, '^rb:v2:{(.+)}:cfg$') or cfg_key
local listed = redis.pcall('ZSCORE', idx_key, budget_name)
if type(listed) == 'table' and listed.err then
  return redis.error_reply('ERR broken key=' .. idx_key .. ' field=type is not a sorted set')
end

local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', cfg_key, 'ratio_ppm', string.format('%d', ratio_ppm), 'window_s', string.format('%d', window_s),
    'min_rps', string.format('%d', min_rps), 'mode', value[4], 'src', 'set')
redis.call('PEXPIRE', cfg_key, CONFIG_TTL_MS)
redis.call('ZADD', idx_key, now_ms + CONFIG_TTL_MS, budget_name)
redis.call('PEXPIRE', idx_key, CONFIG_TTL_MS)
return { ratio_ppm, window_s, min_rps, value[4] }
