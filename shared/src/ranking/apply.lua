-- Applies a batch of ranking commands atomically, after boards.lua's helpers and
-- windows.lua's rolling and trending writes. ARGV[1]: the
-- dedupe window in seconds; ARGV[2]: how far ahead of the server clock a payment's or an
-- update's time may be, in ms; ARGV[3]: most refunds that may wait for one payment;
-- ARGV[4..]: one JSON command each. Every key named carries the {rk} hash tag; the keys a
-- command names are also passed in KEYS. Refunds and cancellations reach the boards the
-- payment record or the concert index names, which carry the same tag. Scores are negated
-- seats (rate boards: negated millionths). Returns one outcome per command: a word, then
-- ': ' and a reason for those that have one.
local TTL, SKEW_MS, MAX_PENDING = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local FIRST_COMMAND = 4
local clock = redis.call('TIME')
local NOW = tonumber(clock[1])
local NOW_MS = NOW * 1000 + math.floor(tonumber(clock[2]) / 1000)

-- The concert index is a sorted set of board keys scored by each board's expiry (inf for
-- the all-time board). One written as a plain set by an earlier version is rewritten once.
local upgraded = {}
local function upgrade_index(index)
  if upgraded[index] then return end
  upgraded[index] = true
  if redis.call('TYPE', index).ok ~= 'set' then return end
  local boards = redis.call('SMEMBERS', index)
  redis.call('DEL', index)
  for _, key in ipairs(boards) do
    local expires_at = redis.call('EXPIRETIME', key)
    if expires_at == -1 then
      redis.call('ZADD', index, 'inf', key)
    elseif expires_at > 0 then
      redis.call('ZADD', index, expires_at, key)
    end
  end
end

-- Indexes a payment added new boards to in this call: index -> true when one of them never
-- expires. Each is pruned once, at the end; an index that gains no board needs no pruning,
-- as its last board and so its expiry stay the same.
local grown = {}

-- Drops boards that have expired from each grown index, and lets the index end with its
-- last board: never while it lists the all-time board.
local function prune_indexes()
  for index, forever in pairs(grown) do
    redis.call('ZREMRANGEBYSCORE', index, '-inf', NOW)
    local last = forever and {'', 'inf'} or redis.call('ZRANGE', index, -1, -1, 'WITHSCORES')
    if last[2] == 'inf' then
      redis.call('PERSIST', index)
    elseif last[2] then
      redis.call('EXPIREAT', index, tonumber(last[2]))
    end
  end
end

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

-- Boards each index was given in this call: index -> {key -> true}.
local indexed = {}

local function pay(op)
  local contents = payment_contents(op)
  local seen = redis.call('HMGET', op.record, 'concert', 'contents')
  if seen[1] then
    -- A record written by an earlier version has no contents to compare.
    if not seen[2] or seen[2] == contents then return 'duplicate' end
    return 'conflict: paymentId was first delivered with ' .. seen[2] .. ', now with ' .. contents
  end
  if op.at > NOW_MS + SKEW_MS then
    return 'implausible: completedAt is more than ' .. SKEW_MS / 1000 ..
      ' s ahead of the server clock'
  end
  if op.at < (NOW - TTL) * 1000 then
    return 'implausible: completedAt is older than the dedupe window (' .. TTL / 86400 ..
      ' days)'
  end
  -- Neither cancelled nor awaited by refunds, as is usual: one call tells.
  local refunded = 0
  if redis.call('EXISTS', op.cancelled, op.pending) > 0 then
    if redis.call('EXISTS', op.cancelled) == 1 then return 'ignored: concert cancelled' end
    refunded = take_pending(op)
  end
  local seats = op.seats - math.min(op.seats, refunded)
  local counted, note = {}, ''
  if seats > 0 then
    local listed, forever = {}, false
    local known = indexed[op.index] or {}
    indexed[op.index] = known
    for _, board in ipairs(op.boards) do
      local key, expires_at = board[1], board[2]
      -- A board past its retention is not recreated; longer boards still count.
      if expires_at == 0 or expires_at > NOW then
        tally(key, op.concert, seats, capacity_of(op.concert), expires_at, true)
        if not known[key] then
          known[key] = true
          listed[#listed + 1] = expires_at > 0 and expires_at or 'inf'
          listed[#listed + 1] = key
          forever = forever or expires_at == 0
        end
        counted[#counted + 1] = key
      end
    end
    if #listed > 0 then
      local added = redis.pcall('ZADD', op.index, unpack(listed))
      if type(added) == 'table' then
        -- WRONGTYPE: the plain set of an earlier version.
        upgrade_index(op.index)
        added = redis.call('ZADD', op.index, unpack(listed))
      end
      if added > 0 then grown[op.index] = grown[op.index] or forever end
    end
    -- The rolling and trending boards (windows.lua), written now, listed in the index.
    local rolled
    rolled, note = windows_pay(op, seats, NOW_MS)
    if #rolled > 0 then
      local entries = {}
      for _, board in ipairs(rolled) do
        entries[#entries + 1] = board[2]
        entries[#entries + 1] = board[1]
      end
      if redis.call('ZADD', op.index, unpack(entries)) > 0 then
        grown[op.index] = grown[op.index] or false
      end
    end
  end
  redis.call('HSET', op.record, 'concert', op.concert, 'seats', seats,
    'boards', table.concat(counted, ' '), 'contents', contents, 'windows', note)
  redis.call('EXPIRE', op.record, TTL)
  return 'applied'
end

local function refund(op)
  local contents = 'paymentId=' .. op.payment .. ' concertId=' .. op.concert .. ' seats=' ..
    op.seats
  local seen = redis.call('GET', op.dedupe)
  if seen then
    -- '1' is the mark of an earlier version, which kept no contents.
    if seen == '1' or seen == contents then return 'duplicate' end
    return 'conflict: refund was first delivered with ' .. seen .. ', now with ' .. contents
  end
  local record = redis.call('HMGET', op.record, 'concert', 'seats', 'boards', 'windows')
  if not record[1] then
    -- The payment has not landed yet: the refund waits for it.
    if redis.call('HLEN', op.pending) >= MAX_PENDING then
      return 'refused: ' .. MAX_PENDING .. ' refunds already wait for this payment'
    end
    redis.call('HSET', op.pending, op.dedupe, op.concert .. ' ' .. op.seats)
    redis.call('EXPIRE', op.pending, TTL)
    redis.call('SET', op.dedupe, contents, 'EX', TTL)
    return 'pending'
  end
  if record[1] ~= op.concert then return 'ignored: concertId differs from the payment' end
  redis.call('SET', op.dedupe, contents, 'EX', TTL)
  local seats = math.min(op.seats, tonumber(record[2]))
  if seats <= 0 then return 'ignored: payment already fully refunded' end
  redis.call('HINCRBY', op.record, 'seats', -seats)
  local capacity = capacity_of(op.concert)
  for key in string.gmatch(record[3], '%S+') do
    uncount(key, op.concert, seats, capacity)
  end
  windows_refund(op, record[4], seats)
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
  -- The marker never expires: a cancelled concert never comes back.
  if redis.call('SET', op.cancelled, 1, 'NX') then return 'applied' end
  redis.call('PERSIST', op.cancelled) -- written with a TTL by an earlier version
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
  if redis.call('EXISTS', op.cancelled) == 1 then return 'ignored: concert cancelled' end
  local at_text, capacity = string.match(op.value, '^(%d+) (%d+) ')
  local at = tonumber(at_text)
  capacity = tonumber(capacity)
  if at > NOW_MS + SKEW_MS then
    return 'implausible: updatedAt is more than ' .. SKEW_MS / 1000 ..
      ' s ahead of the server clock'
  end
  local stored = redis.call('HGET', DETAILS, op.concert)
  local old_capacity
  if stored then
    local stored_at, stored_capacity = string.match(stored, '^(%d+) (%d+) ')
    stored_at = tonumber(stored_at)
    if stored_at > at then
      return 'ignored: an update with a later updatedAt is already applied'
    end
    if stored_at == at then
      if stored == op.value then return 'duplicate' end
      return 'conflict: updatedAt ' .. at_text .. ' ms was first delivered with ' ..
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

local handlers = {pay = pay, refund = refund, cancel = cancel, details = details}
local outcomes = {}
for i = FIRST_COMMAND, #ARGV do
  local op = cjson.decode(ARGV[i])
  if op.op ~= 'pay' then
    write_tallies()
    write_window_tallies()
  end
  outcomes[#outcomes + 1] = handlers[op.op](op)
end
write_tallies()
write_window_tallies()
prune_indexes()
flush_expiries()
return outcomes
