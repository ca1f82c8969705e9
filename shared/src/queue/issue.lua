-- Issue: ARGV[ARG] user. Returns the buyer's live entry, or a new ticket that is active at
-- once only when the queue is not paused, nobody waits and a place is free.
local user = ARGV[ARG]
local state, ticket, until_ms = find(user, nil)
if state == 'waiting' then
  heartbeat(ticket)
  return waiting_reply(0, user, ticket)
elseif state == 'active' then
  return active_reply(0, ticket, until_ms)
end

ticket = redis.call('HINCRBY', META, 'seq', 1)
redis.call('HSET', META, 'last-issue', NOW)
if not PAUSED and redis.call('ZCARD', WAITING) == 0 and live_active_count() < CAPACITY then
  activate(user, ticket)
  return active_reply(1, ticket, NOW + SESSION_MS)
end
redis.call('ZADD', WAITING, ticket, user)
heartbeat(ticket)
return waiting_reply(1, user, ticket)
