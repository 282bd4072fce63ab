-- idempotency-release.lua: give a claim up without an answer (the outcome is not to be replayed:
-- an exception, a 5xx by default), fenced, so the next duplicate executes. lua/README.md.
--
-- KEYS[1]  the record (see idempotency-claim.lua)
-- ARGV[1]  the fencing token the claim returned
--
-- Replies: {'released'} | {'fenced'} (not this holder's claim any more: nothing is changed)

local key = KEYS[1]
if ARGV[1] == nil or ARGV[1] == '' then return redis.error_reply('ERR invalid fence') end
local rec = redis.call('HMGET', key, 'state', 'fence')
if rec[1] ~= 'busy' or rec[2] ~= ARGV[1] then return {'fenced'} end
redis.call('DEL', key)
return {'released'}
