-- delete.lua: remove a budget (configuration, window, clients, paced balance and its index entry)
-- atomically, whatever its keys hold. Documented in lua/README.md (KEYS, reply).
local cfg_key, win_key, cli_key, idx_key, pace_key = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local removed = redis.call('DEL', cfg_key, win_key, cli_key)
-- the paced balance (optional for callers of an older SDK) is no budget on its own: not counted
if pace_key then redis.call('DEL', pace_key) end
local budget_name = string.match(cfg_key, '^rb:v2:{(.+)}:cfg$') or cfg_key
-- a broken index (wrong type) must not stop a delete
redis.pcall('ZREM', idx_key, budget_name)
return removed
