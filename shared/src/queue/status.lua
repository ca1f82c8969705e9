-- Status: ARGV[ARG] user, ARGV[ARG + 1] ticket. A waiter's status poll is its heartbeat
-- (waiting_reply records it).
-- A token that holds no place is answered with its departure in place of the status; in a
-- sold-out queue, every token not active is answered 'soldout' (sold_out_reply); before the
-- opening, a waiter 'prequeue'.
local user, ticket = ARGV[ARG], tonumber(ARGV[ARG + 1])
local state, _, until_ms, since_ms = find(user, ticket)
if SOLD_OUT and state ~= 'active' then return sold_out_reply(state, user, ticket) end
-- Before the opening a pre-queue member has no position and no presence to keep.
if state == 'waiting' and BEFORE_OPENING and not IN_LANE then return prequeue_reply(0, ticket) end
if state == 'waiting' then
  return waiting_reply(0, user, ticket)
elseif state == 'active' then
  return active_reply(0, ticket, until_ms, since_ms)
end
return gone_reply(state, user, ticket)
