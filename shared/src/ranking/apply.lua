-- Applies a batch of ranking commands atomically, after boards.lua's helpers, windows.lua's
-- rolling and trending writes, record.lua and fold.lua. Payments and refunds are recorded
-- here (dedupe, the payment record, refunds waiting for their payment) and queued for the
-- fold, which then runs within BUDGET board writes: what it leaves waits for the next call
-- or tick. Cancellations and details apply at once. Keys (apply.rs APPLY names them too):
-- DETAILS, PAGES and FOLD (boards.lua, fold.lua), then every key a command names, given only
-- so that a cluster routes the call (the script reaches those through the commands). Every
-- key named carries the {rk} hash tag. The fold reaches the boards an entry, the payment
-- record or the concert index names, and the record groups, which carry the same tag.
-- Scores are negated seats (rate boards: negated millionths). Answers {'done', 'outcomes',
-- {outcome...}}, one outcome per command in order, each a tag and named fields: the word
-- ({'applied'}), then 'reason' and the reason for those that have one ({'ignored', 'reason',
-- 'concert cancelled'}). Each command's handler returns the word and the reason.
-- Arguments: the dedupe window in seconds; how far ahead of the server clock a payment's or
-- an update's time may be, in ms; most refunds that may wait for one payment; the window
-- templates (windows.lua); where records live (REC: record.lua, record.rs); the fold's
-- budget; then one JSON command each, a payment's followed by its fold entry's shape.
local TTL, SKEW_MS, MAX_PENDING = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local WIN, REC, BUDGET = cjson.decode(ARGV[4]), cjson.decode(ARGV[5]), tonumber(ARGV[6])
local commands_from = 7

-- Fold entries of this call, pushed at once before the fold.
local queued = {}

-- What a payment's redeliveries must repeat: its concert, seats and genres.
local function payment_contents(op)
  return 'concertId=' .. op.concert .. ' seats=' .. op.seats .. ' genres=' ..
    table.concat(op.genres, ',')
end

-- Seats of the refunds waiting for this payment (those naming its concert), which are
-- then done.
local function take_pending(op)
  local seats, refunds = 0, redis.call('HVALS', op.pending)
  for _, refund in ipairs(refunds) do
    local concert, refunded = string.match(refund, '^(%S+) (%d+)$')
    if concert == op.concert then seats = seats + tonumber(refunded) end
  end
  if #refunds > 0 then redis.call('DEL', op.pending) end
  return seats
end

local function pay(op, fold_text)
  local contents = payment_contents(op)
  op.field = record_field(op.record)
  local group, first = find_record(REC, op, NOW)
  if group then
    if first.concert == op.fpc and first.seats == op.seats and
        first.genres == table.concat(op.genres, ',') then
      return 'duplicate'
    end
    return 'conflict', 'paymentId was first delivered with ' ..
      (first.concert == op.fpc and 'concertId=' .. op.concert or 'another concertId') ..
      ' seats=' .. first.seats .. ' genres=' .. first.genres .. ', now with ' .. contents
  end
  -- A record of the old layout, one hash per payment, until those have expired.
  local seen = redis.call('HMGET', op.legacy, 'concert', 'contents')
  if seen[1] then
    -- A record without contents (written before records kept them) has none to compare.
    if not seen[2] or seen[2] == contents then return 'duplicate' end
    return 'conflict',
      'paymentId was first delivered with ' .. seen[2] .. ', now with ' .. contents
  end
  if op.at > NOW_MS + SKEW_MS then
    return 'implausible', 'completedAt is more than ' .. SKEW_MS / 1000 ..
      ' s ahead of the server clock'
  end
  if op.at < (NOW - TTL) * 1000 then
    return 'implausible', 'completedAt is older than the dedupe window (' .. TTL / 86400 ..
      ' days)'
  end
  -- Neither cancelled nor awaited by refunds, as is usual: one call tells.
  local refunded = 0
  if redis.call('EXISTS', op.cancelled, op.pending) > 0 then
    if redis.call('EXISTS', op.cancelled) == 1 then return 'ignored', 'concert cancelled' end
    refunded = take_pending(op)
  end
  local seats = op.seats - math.min(op.seats, refunded)
  group = write_record(REC, op, {concert = op.fpc, seats = op.seats, left = seats, counted = 0,
    day = op.day, week = op.week, b = op.b, k = op.k, w = op.w,
    genres = table.concat(op.genres, ',')}, NOW, TTL)
  if seats > 0 then
    queued[#queued + 1] = table.concat({'p', seats, group, op.record, fold_text}, ' ')
  end
  return 'applied'
end

local function refund(op)
  local contents = 'paymentId=' .. op.payment .. ' concertId=' .. op.concert .. ' seats=' ..
    op.seats
  local seen = redis.call('GET', op.dedupe)
  if seen then
    -- '1' marks a refund recorded before refunds kept their contents. Marks end after the
    -- dedupe window, so this test can go one window after every deployment writes contents.
    if seen == '1' or seen == contents then return 'duplicate' end
    return 'conflict', 'refund was first delivered with ' .. seen .. ', now with ' .. contents
  end
  op.field = record_field(op.record)
  local group, record = find_record(REC, op, NOW)
  local legacy = not group and redis.call('HMGET', op.legacy, 'concert', 'seats')
  if legacy and not legacy[1] then
    -- The payment has not landed yet: the refund waits for it.
    if redis.call('HLEN', op.pending) >= MAX_PENDING then
      return 'refused', MAX_PENDING .. ' refunds already wait for this payment'
    end
    redis.call('HSET', op.pending, op.dedupe, op.concert .. ' ' .. op.seats)
    redis.call('EXPIRE', op.pending, TTL)
    redis.call('SET', op.dedupe, contents, 'EX', TTL)
    return 'pending'
  end
  if (group and record.concert ~= op.fpc) or (legacy and legacy[1] ~= op.concert) then
    return 'ignored', 'concertId differs from the payment'
  end
  redis.call('SET', op.dedupe, contents, 'EX', TTL)
  local seats = math.min(op.seats, group and record.left or tonumber(legacy[2]))
  if seats <= 0 then return 'ignored', 'payment already fully refunded' end
  if group then
    update_record(group, op.field, function(r) r.left = r.left - seats end)
    queued[#queued + 1] = table.concat({'r', seats, op.concert, group, op.record, op.cancelled}, ' ')
  else
    redis.call('HINCRBY', op.legacy, 'seats', -seats)
    queued[#queued + 1] = table.concat({'R', seats, op.concert, op.legacy, op.cancelled}, ' ')
  end
  return 'applied'
end

local function cancel(op)
  upgrade_index(op.index)
  local capacity = capacity_of(op.concert)
  for _, key in ipairs(redis.call('ZRANGE', op.index, 0, -1)) do
    redis.call('ZREM', key, op.concert)
    if capacity then redis.call('ZREM', rate_key(key), op.concert) end
  end
  redis.call('DEL', op.index)
  -- Details always carry a capacity: without one there are none to delete.
  if capacity then
    redis.call('HDEL', DETAILS, op.concert)
    set_capacity(op.concert, nil)
  end
  -- The marker never expires: a cancelled concert never comes back. Its entries still in
  -- the fold queue are skipped.
  cancelled[op.cancelled] = true
  if redis.call('SET', op.cancelled, 1, 'NX') then return 'applied' end
  -- A marker written with a TTL (before markers were kept for good) is kept for good now.
  -- This can go once every deployment has seen each such marker expire or be rewritten.
  redis.call('PERSIST', op.cancelled)
  return 'duplicate'
end

-- Rewrites the concert's rate entries on every board its index lists, for `capacity`.
-- Trending boards score decayed sales, not seats: they have no rate board.
local function rerate(op, capacity)
  upgrade_index(op.index)
  local boards = redis.call('ZRANGE', op.index, 0, -1, 'WITHSCORES')
  for i = 1, #boards, 2 do
    local key = boards[i]
    local score = not string.find(key, ':{rk}:board:trending:', 1, true) and
      redis.call('ZSCORE', key, op.concert)
    if score then
      rate(rate_key(key), op.concert, -tonumber(score), capacity,
        boards[i + 1] == 'inf' and 0 or tonumber(boards[i + 1]))
    end
  end
end

-- Stores a concert's details; the latest updatedAt wins, whatever the order of arrival.
local function details(op)
  if redis.call('EXISTS', op.cancelled) == 1 then return 'ignored', 'concert cancelled' end
  local at_text, capacity = string.match(op.value, '^(%d+) (%d+) ')
  local at = tonumber(at_text)
  capacity = tonumber(capacity)
  if at > NOW_MS + SKEW_MS then
    return 'implausible', 'updatedAt is more than ' .. SKEW_MS / 1000 ..
      ' s ahead of the server clock'
  end
  local stored = redis.call('HGET', DETAILS, op.concert)
  local old_capacity
  if stored then
    local stored_at, stored_capacity = string.match(stored, '^(%d+) (%d+) ')
    stored_at = tonumber(stored_at)
    if stored_at > at then
      return 'ignored', 'an update with a later updatedAt is already applied'
    end
    if stored_at == at then
      if stored == op.value then return 'duplicate' end
      return 'conflict', 'updatedAt ' .. at_text .. ' ms was first delivered with ' ..
        string.match(stored, '^%d+ %d+ (.*)$') .. ', now with ' ..
        string.match(op.value, '^%d+ %d+ (.*)$')
    end
    old_capacity = tonumber(stored_capacity)
  end
  redis.call('HSET', DETAILS, op.concert, op.value)
  set_capacity(op.concert, capacity)
  if capacity ~= old_capacity then rerate(op, capacity) end
  return 'applied'
end

-- A handler's word and reason as an outcome.
local function outcome(word, reason)
  if reason then return {word, 'reason', reason} end
  return {word}
end

local handlers = {pay = pay, refund = refund, cancel = cancel, details = details}
local outcomes = {}
local i = commands_from
while i <= #ARGV do
  local op = cjson.decode(ARGV[i])
  if op.op == 'pay' then
    -- A payment's fold entry follows it, as its own argument: decoded only by the fold.
    outcomes[#outcomes + 1] = outcome(pay(op, ARGV[i + 1]))
    i = i + 2
  else
    outcomes[#outcomes + 1] = outcome(handlers[op.op](op))
    i = i + 1
  end
end
if #queued > 0 then redis.call('RPUSH', FOLD, unpack(queued)) end
fold(BUDGET, WIN, TTL)
prune_indexes()
flush_expiries()
forget_pages()
return {'done', 'outcomes', outcomes}
