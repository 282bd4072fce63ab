-- idempotency-complete.lua: store the answer of a claimed execution, fenced. lua/README.md.
--
-- KEYS[1]  the record (see idempotency-claim.lua)
-- ARGV[1]  the fencing token the claim returned
-- ARGV[2]  HTTP status
-- ARGV[3]  chosen headers, encoded by the caller (server-kit: "name\nvalue\n" pairs)
-- ARGV[4]  body, encoded by the caller (server-kit: Base64)
-- ARGV[5]  result TTL in ms
--
-- Replies: {'stored'} | {'fenced'} (the record is gone, finished, or claimed again by a newer
-- holder: nothing is written). A holder whose lease ran out but that nobody took over still stores.

if redis.replicate_commands then redis.replicate_commands() end

local key = KEYS[1]
local ttl = tonumber(ARGV[5])
if ARGV[1] == nil or ARGV[1] == '' then return redis.error_reply('ERR invalid fence') end
if tonumber(ARGV[2]) == nil then return redis.error_reply('ERR invalid status') end
if ttl == nil or ttl ~= math.floor(ttl) or ttl < 1 then return redis.error_reply('ERR invalid ttl_ms') end

local rec = redis.call('HMGET', key, 'state', 'fence')
if rec[1] ~= 'busy' or rec[2] ~= ARGV[1] then return {'fenced'} end
redis.call('HSET', key, 'state', 'done', 'status', ARGV[2], 'headers', ARGV[3], 'body', ARGV[4])
redis.call('HDEL', key, 'until')
redis.call('PEXPIRE', key, ttl)
return {'stored'}
