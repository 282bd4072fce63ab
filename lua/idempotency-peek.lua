-- idempotency-peek.lua: what an idempotency record holds now, read-only: admission asks it before
-- shedding a request that carries a key (a stored answer is a replay, a claim a retry).
-- Documented in lua/README.md ("server-kit").
--
-- KEYS[1]  the record (see idempotency-claim.lua)
--
-- Replies: {'none'} (no record, or a value that is not one) | {'busy'} | {'done', ms it lives on}
-- (-1: no TTL). Writes nothing.

local key = KEYS[1]
if redis.call('TYPE', key).ok ~= 'hash' then return {'none'} end
local state = redis.call('HGET', key, 'state')
if state == 'busy' then return {'busy'} end
if state == 'done' then return {'done', string.format('%d', redis.call('PTTL', key))} end
return {'none'}
