-- idempotency-claim.lua: claim an idempotency record (or a tie) for one execution, atomically.
-- Documented in lua/README.md ("server-kit"): KEYS, ARGV, reply.
--
-- KEYS[1]  the record, a hash: rb:idem:v1:{<scope hash>} (or rb:tie:v1:{<tie hash>})
-- ARGV[1]  fingerprint of the request (any non-empty string; SHA-256 hex from server-kit)
-- ARGV[2]  lease in ms: how long the claim holds before another request may take it over
-- ARGV[3]  optional holder token, unique to this claim request (1-64 characters): stored as
--          'holder', so that idempotency-abandon.lua can undo this claim when its reply was lost
--
-- Replies: {'claimed', fence, 'new'|'takeover'} | {'busy', ms left on the holder's lease}
--        | {'mismatch'} (same key, other fingerprint) | {'done', status, headers, body}
--
-- The fencing token is Redis's time in microseconds, raised above the record's previous token:
-- it grows with every claim of the record, and also across the record's deletion (a released or
-- expired claim), so a holder whose lease ran out can never write over a newer claim.

-- Redis 6.2 replicates scripts verbatim unless told otherwise, and then refuses writes after TIME.
if redis.replicate_commands then redis.replicate_commands() end

local key = KEYS[1]
local fp = ARGV[1]
local lease = tonumber(ARGV[2])
if fp == nil or fp == '' then return redis.error_reply('ERR invalid fingerprint') end
if lease == nil or lease ~= math.floor(lease) or lease < 1 or lease > 86400000 then
  return redis.error_reply('ERR invalid lease_ms')
end
local holder = ARGV[3] or ''
if #holder > 64 then return redis.error_reply('ERR invalid holder') end

local t = redis.call('TIME')
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
local now_ms = math.floor(now_us / 1000)

-- A value that is not a record of ours (another type, a hash without a known state or fingerprint,
-- a finished record whose status or body cannot be decoded) would strand the key (an error on
-- every claim, and no TTL): it is treated as absent and replaced by this claim, which sets a TTL.
local kind = redis.call('TYPE', key).ok
local rec = {}
local state = nil
if kind == 'hash' then
  rec = redis.call('HMGET', key, 'state', 'fp', 'fence', 'until', 'status', 'headers', 'body')
  state = rec[1]
  local valid = rec[2] and (state == 'busy' or state == 'done')  -- a missing field is false here
  if valid and state == 'done' then
    local status = tonumber(rec[5])
    local body = rec[7] or ''
    valid = status ~= nil and status == math.floor(status) and status >= 100 and status <= 599
      and #body % 4 == 0 and string.find(body, '^[A-Za-z0-9+/]*=?=?$') ~= nil
  end
  if not valid then
    redis.call('DEL', key)
    state = nil
  end
elseif kind ~= 'none' then
  redis.call('DEL', key)
end
if state then
  if rec[2] ~= fp then return {'mismatch'} end
  if state == 'done' then return {'done', rec[5], rec[6], rec[7]} end
  local held_until = tonumber(rec[4]) or 0
  if held_until > now_ms then return {'busy', string.format('%d', held_until - now_ms)} end
end

local fence = now_us
local previous = tonumber(rec[3])
if previous and previous >= fence then fence = previous + 1 end
local fence_s = string.format('%d', fence)
redis.call('HSET', key, 'state', 'busy', 'fp', fp, 'fence', fence_s, 'until', string.format('%d', now_ms + lease))
if holder ~= '' then redis.call('HSET', key, 'holder', holder) else redis.call('HDEL', key, 'holder') end
-- an abandoned claim goes away by itself one lease after its lease ended
redis.call('PEXPIRE', key, 2 * lease)
if state then return {'claimed', fence_s, 'takeover'} end
return {'claimed', fence_s, 'new'}
