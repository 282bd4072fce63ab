#!lua flags=allow-cross-slot-keys,no-writes
-- list.lua (Redis >= 7.0, Cluster): the budget names in the index keys of many slots, read in one
-- call on the node that serves them. ARGV[1]: the least score (Redis ms) of a name still listed;
-- ARGV[2]: the index key prefix; ARGV[3..]: slot tags, each naming the key PREFIX .. tag .. '}'.
-- The keys are not declared (one node's thousands of slots): Redis checks each is served here and
-- answers an error otherwise, and the caller then reads those keys one by one. A key of the wrong
-- type is an error that names it. Nothing is written.
local min_score, prefix = ARGV[1], ARGV[2]
local names = {}
for i = 3, #ARGV do
  local key = prefix .. ARGV[i] .. '}'
  local members = redis.pcall('ZRANGEBYSCORE', key, min_score, '+inf')
  if type(members) == 'table' and members.err then
    if string.find(members.err, 'WRONGTYPE', 1, true) then
      return redis.error_reply('ERR broken key=' .. key .. ' field=type is not a sorted set')
    end
    return redis.error_reply(members.err)
  end
  for j = 1, #members do
    names[#names + 1] = members[j]
  end
end
return names
