-- index.lua: list a budget whose configuration was written before the index of budget names existed
-- (the coordinator's backfill calls it for each configuration key its SCAN finds). KEYS[1]: the
-- configuration, KEYS[2]: the index. Adds the name, with the configuration's expiry (Redis ms) as
-- its score, when the configuration key exists and the name is not listed; a configuration of the
-- wrong type is listed too, so the listing flags it as broken. Answers 1 when it added the name,
-- else 0. Documented in lua/README.md.
local CONFIG_TTL_MS = 7 * 24 * 3600 * 1000
local cfg_key, idx_key = KEYS[1], KEYS[2]
local budget_name = string.match(cfg_key, '^rb:v2:{(.+)}:cfg$')
if not budget_name then return 0 end
if redis.call('TYPE', cfg_key).ok == 'none' then return 0 end
local listed = redis.pcall('ZSCORE', idx_key, budget_name)
if type(listed) == 'table' and listed.err then
  return redis.error_reply('ERR broken key=' .. idx_key .. ' field=type is not a sorted set')
end
if listed then return 0 end
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = redis.call('PTTL', cfg_key)
if ttl <= 0 then ttl = CONFIG_TTL_MS end
redis.call('ZADD', idx_key, now_ms + ttl, budget_name)
-- the index key lives at least as long as its longest-lived entry (never shortened here)
local idx_ttl = redis.call('PTTL', idx_key)
if idx_ttl ~= -1 and idx_ttl < ttl then redis.call('PEXPIRE', idx_key, ttl) end
if idx_ttl == -1 and redis.call('ZCARD', idx_key) == 1 then redis.call('PEXPIRE', idx_key, ttl) end
return 1
