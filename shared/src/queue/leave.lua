-- Leave: ARGV[4] user, ARGV[5] ticket, ARGV[6] admit per tick. Frees the place at once;
-- a freed active place goes straight to the next present waiter. Returns 1 if left.
local user, ticket = ARGV[4], tonumber(ARGV[5])
local state = find(user, ticket)
if state == 'waiting' then
  redis.call('ZREM', WAITING, user)
  return 1
elseif state == 'active' then
  redis.call('ZREM', ACTIVE, user)
  redis.call('HDEL', TICKETS, user)
  promote(tonumber(ARGV[6]))
  return 1
end
return 0
