-- configure.lua: set a budget's configuration. Fields given as '' keep their stored value (or take
-- the default given when none is stored). Validated here too, so no client can store a bad value.
-- Documented in lua/README.md (KEYS, ARGV, reply).
local CONFIG_TTL_MS = 7 * 24 * 3600 * 1000
local cfg_key = KEYS[1]
local names = { 'ratio_ppm', 'window_s', 'min_rps', 'mode' }
local current = redis.call('HMGET', cfg_key, unpack(names))
local value = {}
for i = 1, 4 do
  if ARGV[i] ~= nil and ARGV[i] ~= '' then
    value[i] = ARGV[i]
  elseif current[i] then
    value[i] = current[i]
  else
    value[i] = ARGV[4 + i]
  end
end
local ratio_ppm, window_s, min_rps = tonumber(value[1]), tonumber(value[2]), tonumber(value[3])
if ratio_ppm == nil or ratio_ppm ~= math.floor(ratio_ppm) or ratio_ppm < 1 or ratio_ppm > 1000000 then
  return redis.error_reply('ERR invalid ratio_ppm')
end
if window_s == nil or window_s ~= math.floor(window_s) or window_s < 1 or window_s > 3600 then
  return redis.error_reply('ERR invalid window_s')
end
if min_rps == nil or min_rps ~= math.floor(min_rps) or min_rps < 0 or min_rps > 1000000 then
  return redis.error_reply('ERR invalid min_rps')
end
if value[4] ~= 'enforce' and value[4] ~= 'shadow' then return redis.error_reply('ERR invalid mode') end
redis.call('HSET', cfg_key, 'ratio_ppm', value[1], 'window_s', value[2], 'min_rps', value[3], 'mode', value[4])
redis.call('PEXPIRE', cfg_key, CONFIG_TTL_MS)
return { ratio_ppm, window_s, min_rps, value[4] }
