-- Gatekeeper check: ARGV[ARG] user, ARGV[ARG + 1] ticket. Read-only. Returns the session
-- end in ms when that ticket is active right now, else 0.
local state, _, until_ms = find(ARGV[ARG], tonumber(ARGV[ARG + 1]))
if state == 'active' then return until_ms end
return 0
