-- Promotion tick. Removes expired sessions, admits, then updates the admission rate, an
-- exponentially weighted moving average of admissions per minute (time constant one
-- minute) measured only while people wait and the queue is not paused.
-- Returns {admitted, dropped, expired, waiting, active, rate} with the lists as promote()
-- and purge_expired() give them.
local expired = purge_expired(1000)
local waiting_before = redis.call('ZCARD', WAITING)
local admitted, dropped = promote(ADMIT_PER_TICK)

local total = tonumber(redis.call('HGET', META, 'admitted') or '0')
local mark_at = tonumber(redis.call('HGET', META, 'rate-mark-at'))
if waiting_before == 0 or PAUSED or not mark_at then
  redis.call('HSET', META, 'rate-mark-at', NOW, 'rate-mark-admitted', total)
elseif NOW - mark_at >= 1000 then
  local elapsed = NOW - mark_at
  local since = total - tonumber(redis.call('HGET', META, 'rate-mark-admitted') or total)
  local sample = since * 60000 / elapsed
  local current = tonumber(redis.call('HGET', META, 'rate'))
  if current then
    current = current + (1 - math.exp(-elapsed / 60000)) * (sample - current)
  else
    current = sample
  end
  redis.call('HSET', META, 'rate', string.format('%.4f', current),
    'rate-mark-at', NOW, 'rate-mark-admitted', total)
end
return {admitted, dropped, expired, redis.call('ZCARD', WAITING), live_active_count(), rate()}
