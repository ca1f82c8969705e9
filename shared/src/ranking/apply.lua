-- Applies a batch of ranking commands atomically. ARGV[1]: dedupe TTL in seconds;
-- ARGV[2..]: one JSON command each. Every key named carries the {rk} hash tag; the keys a
-- command names are also passed in KEYS. Refunds and cancellations reach the boards the
-- payment record or the concert index names, which carry the same tag.
-- Scores are negated seats. Returns one outcome per command.
local TTL = tonumber(ARGV[1])
local NOW = tonumber(redis.call('TIME')[1])

local function pay(op)
  if redis.call('EXISTS', op.record) == 1 then return 'duplicate' end
  if redis.call('EXISTS', op.cancelled) == 1 then return 'ignored: concert cancelled' end
  local counted = {}
  for _, board in ipairs(op.boards) do
    local key, expires_at = board[1], board[2]
    -- A board past its retention is not recreated; longer boards still count.
    if expires_at == 0 or expires_at > NOW then
      redis.call('ZINCRBY', key, -op.seats, op.concert)
      if expires_at > 0 then redis.call('EXPIREAT', key, expires_at) end
      redis.call('SADD', op.index, key)
      counted[#counted + 1] = key
    end
  end
  redis.call('HSET', op.record, 'concert', op.concert, 'seats', op.seats,
    'boards', table.concat(counted, ' '))
  redis.call('EXPIRE', op.record, TTL)
  return 'applied'
end

local function refund(op)
  if redis.call('EXISTS', op.dedupe) == 1 then return 'duplicate' end
  local record = redis.call('HMGET', op.record, 'concert', 'seats', 'boards')
  if not record[1] then return 'ignored: payment not seen' end
  if record[1] ~= op.concert then return 'ignored: concertId differs from the payment' end
  redis.call('SET', op.dedupe, 1, 'EX', TTL)
  local seats = math.min(op.seats, tonumber(record[2]))
  if seats <= 0 then return 'ignored: payment already fully refunded' end
  redis.call('HINCRBY', op.record, 'seats', -seats)
  for key in string.gmatch(record[3], '%S+') do
    local score = redis.call('ZSCORE', key, op.concert)
    if score then
      if tonumber(score) + seats >= 0 then
        redis.call('ZREM', key, op.concert)
      else
        redis.call('ZINCRBY', key, seats, op.concert)
      end
    end
  end
  return 'applied'
end

local function cancel(op)
  for _, key in ipairs(redis.call('SMEMBERS', op.index)) do
    redis.call('ZREM', key, op.concert)
  end
  redis.call('DEL', op.index)
  if redis.call('SET', op.cancelled, 1, 'EX', TTL, 'NX') then return 'applied' end
  return 'duplicate'
end

local handlers = {pay = pay, refund = refund, cancel = cancel}
local outcomes = {}
for i = 2, #ARGV do
  local op = cjson.decode(ARGV[i])
  outcomes[#outcomes + 1] = handlers[op.op](op)
end
return outcomes
