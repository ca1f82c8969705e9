-- Register: REGISTRY, the campaign registry (a sorted set: member the campaign, score the
-- instant its keys expire); member, its expiry ms expires_at, and most, the most live
-- campaigns. Campaigns past their expiry leave first. Answers {'registered'}, or {'full'}
-- when the registry is full and the member is not in it. The registry itself expires with
-- its last member.
local REGISTRY = KEYS[1]
local member, expires_at, most = ARGV[1], ARGV[2], tonumber(ARGV[3])
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', REGISTRY, '-inf', now)
if not redis.call('ZSCORE', REGISTRY, member)
  and redis.call('ZCARD', REGISTRY) >= most then
  return {'full'}
end
-- GT (which still adds a new member): a change that shortens the campaign, or one refused
-- after this call (only when a claim or a change came between its check and its write),
-- never takes it off the registry before its keys expire.
redis.call('ZADD', REGISTRY, 'GT', expires_at, member)
local last = redis.call('ZRANGE', REGISTRY, -1, -1, 'WITHSCORES')
redis.call('PEXPIREAT', REGISTRY, last[2])
return {'registered'}
