-- fragments/fleet.lua: begin.
-- Included by budget.lua and status.lua; io.retrybudget.budget.internal.FleetCount is the same in Java.
-- The fleet record (the clients hash's field '') brought to `epoch`: clients counted in it, clients
-- counted in the epoch before, and whether the record was already of this epoch. A record of an
-- earlier epoch gives its count as the epoch before's (the last epoch with calls: every client that
-- still lives was in it); one stamped ahead of this clock (a failover to a replica whose clock is
-- behind) carries the most it knew; one that is not of the form `<epoch>:<n>:<n>` reads as none.
local function fleet_read(record, epoch)
  local e, n, p = string.match(record or '', '^(%d+):(%d+):(%d+)$')
  e, n, p = tonumber(e), tonumber(n), tonumber(p)
  if e == epoch then return n, p, true end
  if e == nil then return 0, 0, false end
  if e < epoch then return 0, n, false end
  return 0, math.max(n, p), false
end
-- fragments/fleet.lua: end
