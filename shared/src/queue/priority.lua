-- Priority list: ARGV[ARG] 'add' or 'remove', ARGV[ARG + 1] the user id (validated), ARGV[ARG
-- + 2] the most ids the list may hold. Adding creates the queue, as a settings change does,
-- and turns its priority lane on (the settings field 'lane'); removing the last id turns it
-- off once the lane is empty too. Returns {done (0: the list is full), ids on the list}.
local op, user, most = ARGV[ARG], ARGV[ARG + 1], tonumber(ARGV[ARG + 2])
if op == 'add' then
  if redis.call('SISMEMBER', PRIORITY, user) == 0 and redis.call('SCARD', PRIORITY) >= most then
    return {0, redis.call('SCARD', PRIORITY)}
  end
  own_settings()
  redis.call('SADD', PRIORITY, user)
  redis.call('HSET', SETTINGS, 'lane', 1)
else
  redis.call('SREM', PRIORITY, user)
  if redis.call('SCARD', PRIORITY) == 0 and redis.call('ZCARD', LANE) == 0 then
    redis.call('HDEL', SETTINGS, 'lane')
  end
end
return {1, redis.call('SCARD', PRIORITY)}
