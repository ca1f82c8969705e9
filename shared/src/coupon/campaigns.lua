-- Campaigns: KEYS[1] the campaign registry. The members whose keys have not expired yet,
-- at most the registry's bound. Writes nothing.
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
return redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. now, '+inf')
