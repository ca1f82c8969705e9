-- Register: KEYS[1] the campaign registry (a sorted set: member the campaign, score the
-- instant its keys expire). ARGV[1] the member, ARGV[2] its expiry ms, ARGV[3] the most
-- live campaigns. Campaigns past their expiry leave first. Answers 1, or 0 when the
-- registry is full and the member is not in it. The registry itself expires with its
-- last member.
local REGISTRY = KEYS[1]
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', REGISTRY, '-inf', now)
if not redis.call('ZSCORE', REGISTRY, ARGV[1])
  and redis.call('ZCARD', REGISTRY) >= tonumber(ARGV[3]) then
  return 0
end
-- GT (which still adds a new member): a change that shortens the campaign, or one refused
-- after this call (only when a claim or a change came between its check and its write),
-- never takes it off the registry before its keys expire.
redis.call('ZADD', REGISTRY, 'GT', ARGV[2], ARGV[1])
local last = redis.call('ZRANGE', REGISTRY, -1, -1, 'WITHSCORES')
redis.call('PEXPIREAT', REGISTRY, last[2])
return 1
