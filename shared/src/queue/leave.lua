-- Leave: ARGV[ARG] user, ARGV[ARG + 1] ticket. Frees the place at once; a freed active
-- place goes straight to the next present waiters while the booking system is healthy.
-- Returns {left (0|1), status left ('waiting'|'active') or, when nothing was left, the
-- token's departure, admitted, dropped} with the lists as promote() gives them.
local user, ticket = ARGV[ARG], tonumber(ARGV[ARG + 1])
local state = find(user, ticket)
if state == 'waiting' then
  redis.call('ZREM', IN_LANE and LANE or WAITING, user)
  record_departures({{user, ticket}}, 'left')
  return {1, 'waiting', {}, {}}
elseif state == 'active' then
  end_session(user, 'left')
  -- While the booking system is not healthy (HEALTH below 1) the tick paces admissions.
  if HEALTH < 1 then return {1, 'active', {}, {}} end
  local admitted, dropped = promote(ADMIT_PER_TICK)
  return {1, 'active', admitted, dropped}
end
return {0, departure(state, user, ticket), {}, {}}
