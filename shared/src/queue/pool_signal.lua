-- A BookingHealth level for a whole pool (health.rs): POOL, the pool's ledger hash; level,
-- 0 to 1 as the event gave it; sent, the ms the event was sent. Stored as 'signal' =
-- "level:sent" and answered {'pooled'}, unless one sent as late or later is held ({'stale'}).
-- A pool without a capacity (never made, or deleted) is {'no-pool'}, and nothing is written.
-- The ledger hands the signal to each of the pool's queues (pool.lua), whose tick takes it as
-- a BookingHealth of its own (promote.lua, take_signal).
local POOL = KEYS[1]
local level, sent = ARGV[1], tonumber(ARGV[2])
local held = redis.call('HMGET', POOL, 'capacity', 'signal')
if not held[1] then return {'no-pool'} end
if held[2] then
  local held_sent = tonumber(string.match(held[2], ':(%d+)$'))
  if held_sent and sent <= held_sent then return {'stale'} end
end
redis.call('HSET', POOL, 'signal', string.format('%s:%d', level, sent))
return {'pooled'}
