-- delete.lua: remove a budget (configuration, window, clients and its index entry) atomically,
-- whatever its keys hold. Documented in lua/README.md (KEYS, reply).
local cfg_key, win_key, cli_key, idx_key = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local removed = redis.call('DEL', cfg_key, win_key, cli_key)
local budget_name = string.match(cfg_key, '^rb:v2:{(.+)}:cfg$') or cfg_key
-- a broken index (wrong type) must not stop a delete
redis.pcall('ZREM', idx_key, budget_name)
return removed
