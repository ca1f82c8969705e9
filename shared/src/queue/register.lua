-- Register: REGISTRY, the queue registry; queue, a queue id; most, the most queues it may
-- hold (MAX_QUEUES). Adds the queue unless the registry is full. Returns 1 when the queue
-- is in the registry afterwards, 0 when it was full.
local REGISTRY = KEYS[1]
local queue, most = ARGV[1], tonumber(ARGV[2])
if redis.call('SISMEMBER', REGISTRY, queue) == 1 then return 1 end
if redis.call('SCARD', REGISTRY) >= most then return 0 end
redis.call('SADD', REGISTRY, queue)
return 1
