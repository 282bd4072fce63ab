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
-- Whether a client last counted in epoch `counted` (nil: never) is new to the union of this epoch's
-- clients and the epoch before's, so that the second count grows with it: the estimate is then every
-- client heard from in the two epochs, not the larger of two parts of it. A client of a later epoch (an
-- entry stamped ahead of the clock) is in the count carried over from the record; one last counted two
-- or more epochs ago is new (in the rare record carried from an epoch before the last, that errs high).
local function fleet_new(counted, epoch)
  return counted == nil or counted < epoch - 1
end
-- fragments/fleet.lua: end
