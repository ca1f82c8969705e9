-- Gatekeeper check: ARGV[ARG] user, ARGV[ARG + 1] ticket. Read-only. Returns {session end
-- in ms, ''} when that ticket is active right now, else {0, why}: 'waiting' or its
-- departure ('expired', 'paid', 'dropped', 'left', 'given-back', 'unknown'); in a sold-out
-- queue, 'soldout' for every token not active.
local ticket = tonumber(ARGV[ARG + 1])
local state, _, until_ms = find(ARGV[ARG], ticket)
if state == 'active' then return {until_ms, ''} end
if SOLD_OUT then return {0, 'soldout'} end
if state == 'waiting' then return {0, 'waiting'} end
return {0, departure(state, ARGV[ARG], ticket)}
