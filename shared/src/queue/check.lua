-- Gatekeeper check: ARGV[ARG] user, ARGV[ARG + 1] ticket. Read-only. Returns the session end
-- in ms (an integer) when that ticket is active right now, else why not (a string):
-- 'waiting' or its departure ('expired', 'paid', 'dropped', 'left', 'given-back',
-- 'unknown'); in a sold-out queue, 'soldout' for every token not active. One value, not a
-- table: Redis converts a table reply probe by probe.
-- The head, before the prelude reads settings and meta: an active buyer (the usual caller)
-- is answered from the active set alone.
local head_state, _, head_until = find_active(ARGV[ARG], tonumber(ARGV[ARG + 1]))
if head_state == 'active' then return head_until end
--@body
local ticket = tonumber(ARGV[ARG + 1])
local state = head_state or find(ARGV[ARG], ticket, true)
if SOLD_OUT then return 'soldout' end
if state == 'waiting' then return 'waiting' end
return departure(state, ARGV[ARG], ticket)
