-- idempotency-renew.lua: extend the lease of a claim whose handler is still running, fenced.
-- lua/README.md ("server-kit").
--
-- KEYS[1]  the record (see idempotency-claim.lua)
-- ARGV[1]  the fencing token the claim returned
-- ARGV[2]  lease in ms from now (1 .. 86400000), as in idempotency-claim.lua
--
-- Replies: {'renewed'} | {'fenced'} (the record is gone, finished, or claimed again by a newer
-- holder: nothing is changed). The record lives two leases from now, as after a claim, so a holder
-- that stops renewing (it crashed) lapses one lease after its last renewal.

if redis.replicate_commands then redis.replicate_commands() end

local key = KEYS[1]
local lease = tonumber(ARGV[2])
if ARGV[1] == nil or ARGV[1] == '' then return redis.error_reply('ERR invalid fence') end
if lease == nil or lease ~= math.floor(lease) or lease < 1 or lease > 86400000 then
  return redis.error_reply('ERR invalid lease_ms')
end
if redis.call('TYPE', key).ok ~= 'hash' then return {'fenced'} end
local rec = redis.call('HMGET', key, 'state', 'fence')
if rec[1] ~= 'busy' or rec[2] ~= ARGV[1] then return {'fenced'} end
local t = redis.call('TIME')
local now_ms = math.floor((tonumber(t[1]) * 1000000 + tonumber(t[2])) / 1000)
redis.call('HSET', key, 'until', string.format('%d', now_ms + lease))
redis.call('PEXPIRE', key, 2 * lease)
return {'renewed'}
