-- Retire: ARGV[ARG] ms without a new arrival after which an empty queue is idle. Runs after
-- the caller removed the queue from the registry. If the queue is still idle, deletes its
-- meta (nobody holds a place, so no live token needs its ticket counter; the registration
-- mark goes with it, so the next arrival registers it again), its ticket clock and its
-- presence deadlines, and
-- returns 1. An operator's settings stay: the operator owns them. If a buyer
-- arrived in between (while the mark was still set, so it did not register), returns 0 and
-- the caller puts the queue back in the registry.
local idle_after = tonumber(ARGV[ARG])
if is_idle(idle_after) then
  redis.call('UNLINK', META, CLOCK, PRESENCE)
  return 1
end
return 0
