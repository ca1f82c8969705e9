-- Promotion tick: ARGV[4] admit per tick. Admits, then updates the admission rate, an
-- exponentially weighted moving average of admissions per minute (time constant one
-- minute) measured only while people wait. Returns {admitted, dropped, waiting, active}.
local waiting_before = redis.call('ZCARD', WAITING)
local admitted, dropped = promote(tonumber(ARGV[4]))

local total = tonumber(redis.call('HGET', META, 'admitted') or '0')
local mark_at = tonumber(redis.call('HGET', META, 'rate-mark-at'))
if waiting_before == 0 or not mark_at then
  redis.call('HSET', META, 'rate-mark-at', NOW, 'rate-mark-admitted', total)
elseif NOW - mark_at >= 1000 then
  local elapsed = NOW - mark_at
  local since = total - tonumber(redis.call('HGET', META, 'rate-mark-admitted') or total)
  local sample = since * 60000 / elapsed
  local rate = tonumber(redis.call('HGET', META, 'rate'))
  if rate then
    rate = rate + (1 - math.exp(-elapsed / 60000)) * (sample - rate)
  else
    rate = sample
  end
  redis.call('HSET', META, 'rate', string.format('%.4f', rate),
    'rate-mark-at', NOW, 'rate-mark-admitted', total)
end
return {admitted, dropped, redis.call('ZCARD', WAITING), live_active_count()}
