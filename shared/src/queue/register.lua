-- Register: KEYS[1] the queue registry, ARGV[1] a queue id, ARGV[2] the most queues it may
-- hold (MAX_QUEUES). Adds the queue unless the registry is full. Returns 1 when the queue
-- is in the registry afterwards, 0 when it was full.
if redis.call('SISMEMBER', KEYS[1], ARGV[1]) == 1 then return 1 end
if redis.call('SCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('SADD', KEYS[1], ARGV[1])
return 1
