-- Campaigns: {'campaigns', 'members', {member...}}, the members of REGISTRY, the campaign
-- registry, whose keys have not expired yet, at most the registry's bound. Writes nothing.
local REGISTRY = KEYS[1]
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
return {'campaigns', 'members', redis.call('ZRANGEBYSCORE', REGISTRY, '(' .. now, '+inf')}
