-- Open line: a queue's first buyer creates it on the striped line (QUEUE_CREATION=open).
-- SETTINGS, the queue's settings; now, the ms; keep_ms, how long the queue lasts once nobody
-- is on its line (QUEUE_RETIRE_AFTER_SECONDS). Settings no one made yet are made here, marked
-- 'by-arrival', and end keep_ms on: the tick renews them while anyone is on the line, and an
-- operator's change keeps them for good (configure.lua). Settings that exist are left as
-- they are. Returns 1 when it created the queue, 0 when it found it.
local SETTINGS = KEYS[1]
local now, keep_ms = ARGV[1], ARGV[2]
if redis.call('HSETNX', SETTINGS, 'created', now) == 0 then return 0 end
redis.call('HSET', SETTINGS, 'by-arrival', 1)
redis.call('PEXPIRE', SETTINGS, keep_ms)
return 1
