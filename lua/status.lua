-- status.lua: read a budget's configuration and window without changing anything.
-- Documented in lua/README.md (KEYS, ARGV, reply).
-- the same window as budget.lua: 10 buckets in a ring of 11, the leaving bucket counted by its share
-- (first attempts, denials) and its grants in full until one window after its last grant
local BUCKETS = 10
local RING = 11
local cfg_key, win_key = KEYS[1], KEYS[2]

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

local FIELDS = 6
local fields = { 'bms' }
for i = 0, RING - 1 do
  local n = #fields
  fields[n + 1] = 't' .. i
  fields[n + 2] = 'q' .. i
  fields[n + 3] = 'g' .. i
  fields[n + 4] = 'd' .. i
  fields[n + 5] = 'a' .. i
  fields[n + 6] = 'l' .. i
end
local w = redis.call('HMGET', win_key, unpack(fields)) -- one read of the whole ring
local exists = ((cfg[1] or cfg[2] or cfg[3] or cfg[4]) and 1 or 0) + (w[1] and 1 or 0)

local requests, retries, denied, active = 0, 0, 0, 0
if tonumber(w[1]) == bucket_ms then
  for i = 0, RING - 1 do
    local b = 2 + i * FIELDS
    local stamp = tonumber(w[b])
    if stamp ~= nil and stamp > cur - BUCKETS and stamp <= cur then
      requests = requests + (tonumber(w[b + 1]) or 0)
      retries = retries + (tonumber(w[b + 2]) or 0)
      denied = denied + (tonumber(w[b + 3]) or 0)
      active = active + (tonumber(w[b + 4]) or 0)
    elseif stamp == cur - BUCKETS then
      requests = requests + math.floor((tonumber(w[b + 1]) or 0) * inside_ms / bucket_ms)
      denied = denied + math.floor((tonumber(w[b + 3]) or 0) * inside_ms / bucket_ms)
      if (tonumber(w[b + 5]) or 0) > now_ms - window_s * 1000 then
        retries = retries + (tonumber(w[b + 2]) or 0)
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
