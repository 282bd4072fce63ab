-- idempotency-abandon.lua: undo a claim whose reply never reached its holder.
-- Documented in lua/README.md ("server-kit"): KEYS, ARGV, reply.
--
-- KEYS[1]  the record (rb:idem:v1:{...})
-- ARGV[1]  the holder token the claim was sent with (idempotency-claim.lua's ARGV[3])
--
-- Replies: {'abandoned'} (the record was this token's busy claim: deleted) | {'kept'} (anything
-- else: no claim of this token, another holder's, or a finished record — left untouched).
--
-- A claim whose reply times out on the client may still have been made: the holder never learnt
-- its fencing token, so it cannot release it, and the key would stay IN_PROGRESS for a whole lease.
-- The holder sends this right after the timeout on the same connection, so Redis runs it after
-- the claim whenever it gets to them.

local key = KEYS[1]
local token = ARGV[1]
if token == nil or token == '' or #token > 64 then return redis.error_reply('ERR invalid holder') end
if redis.call('TYPE', key).ok ~= 'hash' then return {'kept'} end
local rec = redis.call('HMGET', key, 'state', 'holder')
if rec[1] ~= 'busy' or rec[2] ~= token then return {'kept'} end
redis.call('DEL', key)
return {'abandoned'}
