-- Challenge: ARGV[ARG] who may create a queue ('open' or 'operator'), ARGV[ARG + 1] how long
-- the door hash is kept after this call (ms: a challenge's lifetime and the redemption
-- slack). KEYS[OWN_KEYS] is the queue's door hash (keys.rs door_key).
-- Hands out the next challenge serial and answers {door settings (door_settings), arrivals a
-- minute, serial, now (ms)}; {'no-queue'} for a queue that does not exist, with nothing
-- written. Arrivals a minute: new places over the last minute-long window, or over the
-- current window so far when that is higher, so a surge counts at once. They come from the
-- ticket counter (meta 'seq'), which the door hash samples once a minute; a counter that
-- restarted (meta expired) starts a new window.
local creation, keep_ms = ARGV[ARG], tonumber(ARGV[ARG + 1])
local DOOR = KEYS[OWN_KEYS]
if creation ~= 'open' and redis.call('EXISTS', SETTINGS) == 0 then return {'no-queue'} end

local seq = tonumber(redis.call('HGET', META, 'seq') or '0')
local door = redis.call('HMGET', DOOR, 'at', 'seq', 'rate')
local at, seq_then, rate = tonumber(door[1]), tonumber(door[2]), tonumber(door[3]) or 0
if not at or not seq_then or seq < seq_then or NOW < at then
  at, seq_then, rate = NOW, seq, 0
  redis.call('HSET', DOOR, 'at', at, 'seq', seq, 'rate', 0)
elseif NOW - at >= 60000 then
  rate = math.floor((seq - seq_then) * 60000 / (NOW - at))
  at, seq_then = NOW, seq
  redis.call('HSET', DOOR, 'at', at, 'seq', seq, 'rate', rate)
end
local current = math.floor((seq - seq_then) * 60000 / math.max(NOW - at, 10000))
local serial = redis.call('HINCRBY', DOOR, 'serial', 1)
redis.call('PEXPIRE', DOOR, keep_ms)
return {door_settings(), math.max(rate, current), serial, NOW}
