-- status.lua: read a budget's configuration and window without changing anything.
-- Documented in lua/README.md (KEYS, ARGV, reply).
-- the same window as budget.lua: 10 buckets in a ring of 11, the leaving bucket counted by its share
-- (first attempts, denials) and its grants in full until one window after its last grant
local BUCKETS = 10
local RING = 11
local cfg_key, win_key = KEYS[1], KEYS[2]

local exists = redis.call('EXISTS', cfg_key) + redis.call('EXISTS', win_key)
local cfg = redis.call('HMGET', cfg_key, 'ratio_ppm', 'window_s', 'min_rps', 'mode')
local ratio_ppm = tonumber(cfg[1]) or tonumber(ARGV[1])
local window_s = tonumber(cfg[2]) or tonumber(ARGV[2])
local min_rps = tonumber(cfg[3]) or tonumber(ARGV[3])
local mode = cfg[4] or ARGV[4]

local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local bucket_ms = window_s * 1000 / BUCKETS
local cur = math.floor(now_ms / bucket_ms)
local inside_ms = bucket_ms - (now_ms - cur * bucket_ms)

local requests, retries, denied, active = 0, 0, 0, 0
if tonumber(redis.call('HGET', win_key, 'bms')) == bucket_ms then
  for i = 0, RING - 1 do
    local v = redis.call('HMGET', win_key, 't' .. i, 'q' .. i, 'g' .. i, 'd' .. i, 'a' .. i, 'l' .. i)
    local stamp = tonumber(v[1])
    if stamp ~= nil and stamp > cur - BUCKETS and stamp <= cur then
      requests = requests + (tonumber(v[2]) or 0)
      retries = retries + (tonumber(v[3]) or 0)
      denied = denied + (tonumber(v[4]) or 0)
      active = active + (tonumber(v[5]) or 0)
    elseif stamp == cur - BUCKETS then
      requests = requests + math.floor((tonumber(v[2]) or 0) * inside_ms / bucket_ms)
      denied = denied + math.floor((tonumber(v[4]) or 0) * inside_ms / bucket_ms)
      if (tonumber(v[6]) or 0) > now_ms - window_s * 1000 then
        retries = retries + (tonumber(v[3]) or 0)
      end
    end
  end
end

local allowance = math.floor(requests / 1000000) * ratio_ppm
    + math.floor((requests % 1000000) * ratio_ppm / 1000000) + min_rps * window_s
-- fractions travel as strings: Redis truncates Lua numbers to integers
local retry_ratio = '0'
if requests > 0 then retry_ratio = string.format('%.6f', retries / requests) end

return { exists, requests, retries, denied, allowance, active, ratio_ppm, window_s, min_rps, mode, retry_ratio }
