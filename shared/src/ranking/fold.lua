-- The fold: puts recorded payments and refunds on the boards. Concatenated after boards.lua,
-- windows.lua and record.lua, and followed by apply.lua (which records events and then
-- folds) or fold_tick.lua (the tick). FOLD is the fold queue, a list: apply.lua pushes one
-- entry per payment or refund it records, and the fold takes entries off its head, oldest
-- first, within a budget of board writes. Its tallies (boards.lua) add up the entries of one
-- call per (board, concert), so a burst of sales of one concert writes each board once.
-- Entries, words (no key or id holds a space):
--   'p <seats> <group> <field> <weights> <shape>': a payment's seats (after the refunds that
--     waited for it), its record (record.lua: the group and the field in hex), its weight
--     on each trending generation of its shape (comma-separated, '-' for none), then its
--     shape as Rust built it (apply.rs): '<concert> <index> <cancelled> <genres,…|-> <b> <n>
--     <board> <expires at>…(n pairs) <trending board> <expires at>…', the keys it names,
--     its rolling bucket, its calendar boards (the overall ones first, in Period::ALL's
--     order, then each genre's) and its trending generations. Payments of one concert in
--     one bucket share their shape;
--   'r <seats> <concert> <group> <field> <cancelled key>': a refund of seats;
--   'P <seats> <record key> <weights> <shape>' and 'R <seats> <concert> <record key>
--     <cancelled key>': the same for a record of the old layout, one hash per payment
--     (queued by an older version, or a refund of a payment it recorded). They can go one
--     dedupe window after every deployment writes today's records.
-- The list is deleted by Redis when the fold empties it.
local FOLD = KEYS[3]
local clock = redis.call('TIME')
local NOW = tonumber(clock[1])
local NOW_MS = NOW * 1000 + math.floor(tonumber(clock[2]) / 1000)

-- Board writes an entry costs beyond its board entries: decoding it, its record and index.
local ENTRY_COST = 4

-- The concert index is a sorted set of board keys scored by each board's expiry (inf for
-- the all-time board). One written as a plain set (before indexes carried expiries) is
-- rewritten once, when next written. An index that lists an all-time board never ends on its
-- own, so this stays until no deployment holds a plain-set index.
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

-- Adds `listed` ({score, key, ...}) to a concert index; notes it grown if any was new.
local function index_boards(index, listed, forever)
  local added = redis.pcall('ZADD', index, unpack(listed))
  if type(added) == 'table' then
    -- WRONGTYPE: a plain-set index (see upgrade_index).
    upgrade_index(index)
    added = redis.call('ZADD', index, unpack(listed))
  end
  if added > 0 then grown[index] = grown[index] or forever end
end

-- Cancellation markers read in this call (apply.lua's cancel sets one).
local cancelled = {}
local function is_cancelled(key)
  local known = cancelled[key]
  if known == nil then
    known = redis.call('EXISTS', key) == 1
    cancelled[key] = known
  end
  return known
end

-- A payment shape's words, as the op windows_shape and new_shape read.
local function payment_op(text)
  local words = {}
  for word in string.gmatch(text, '%S+') do words[#words + 1] = word end
  local op = {concert = words[1], index = words[2], cancelled = words[3], genres = {},
    b = tonumber(words[5]), boards = {}, trend = {}}
  if words[4] ~= '-' then op.genres = split_genres(words[4]) end
  local i = 7
  for _ = 1, tonumber(words[6]) do
    op.boards[#op.boards + 1] = {words[i], tonumber(words[i + 1])}
    i = i + 2
  end
  while words[i] do
    op.trend[#op.trend + 1] = {words[i], tonumber(words[i + 1])}
    i = i + 2
  end
  return op
end

-- Boards each index was given in this call: index -> {key -> true}.
local indexed = {}

-- The payment shapes met in this call, by their text, in order. A shape is read, checked
-- and listed in its concert's index once per call; each payment of it adds its seats and
-- weighed seats to the shape, and the shapes reach the tallies (flush_shapes) before a
-- refund and at the end. So a burst of sales of one concert costs each of them little
-- more than its record.
local shapes, shape_order = {}, {}

-- The record's `counted` bits (record.lua) for a shape: the calendar periods whose overall
-- board is within its retention, the windows that hold its bucket, the live generations.
local function counted_bits(op, windows)
  local bits = 0
  for i = 1, 4 do
    local board = op.boards[i]
    if board and (board[2] == 0 or board[2] > NOW) then
      bits = bits + COUNTED_PERIODS * 2 ^ (i - 1)
    end
  end
  for i in pairs(windows.windows) do bits = bits + COUNTED_WINDOWS * 2 ^ (i - 1) end
  for _, gen in ipairs(windows.trend) do bits = bits + COUNTED_TREND * 2 ^ (gen.at - 1) end
  return bits
end

-- Reads a shape: where it counts (calendar boards within retention, windows that hold its
-- bucket, live trending generations), and lists those boards in the concert index.
local function new_shape(op, win)
  local shape = {op = op, seats = 0, weighed = {}}
  if is_cancelled(op.cancelled) then
    shape.skip = true
    return shape
  end
  shape.capacity = capacity_of(op.concert)
  local counted, boards, listed, forever = {}, {}, {}, false
  local known = indexed[op.index] or {}
  indexed[op.index] = known
  for _, board in ipairs(op.boards) do
    local key, expires_at = board[1], board[2]
    -- A board past its retention is not recreated; longer boards still count.
    if expires_at == 0 or expires_at > NOW then
      boards[#boards + 1] = board
      counted[#counted + 1] = key
      if not known[key] then
        known[key] = true
        listed[#listed + 1] = expires_at > 0 and expires_at or 'inf'
        listed[#listed + 1] = key
        forever = forever or expires_at == 0
      end
    end
  end
  local windows = windows_shape(op, win, NOW_MS)
  local rolled = {}
  for _, board in ipairs(windows.rolling) do rolled[#rolled + 1] = board end
  for _, gen in ipairs(windows.trend) do
    for _, key in ipairs(gen.boards) do rolled[#rolled + 1] = {key, gen.expires_at} end
  end
  for _, board in ipairs(rolled) do
    if not known[board[1]] then
      known[board[1]] = true
      -- Listed until the next full hour after the board's expiry: the score of a rolling
      -- board, which each payment pushes back, then changes once an hour, and listing it
      -- again is a lookup, not a rewrite of the index.
      listed[#listed + 1] = math.ceil(board[2] / 3600) * 3600
      listed[#listed + 1] = board[1]
    end
  end
  if #listed > 0 then index_boards(op.index, listed, forever) end
  shape.boards, shape.counted, shape.windows = boards, table.concat(counted, ' '), windows
  shape.bits = counted_bits(op, windows)
  for i in ipairs(windows.trend) do shape.weighed[i] = 0 end
  return shape
end

-- Adds a payment to its shape, and notes on its record where it counted: `record` is
-- {group, field} for a record of today's layout, {key} for one of the old layout.
local function fold_payment(shape, seats, record, weights, ttl)
  if shape.skip then return end
  shape.seats = shape.seats + seats
  for i, gen in ipairs(shape.windows.trend) do
    shape.weighed[i] = shape.weighed[i] + seats * tonumber(weights[gen.at])
  end
  if record.group then
    update_record(record.group, record.field, function(r) r.counted = shape.bits end)
    return
  end
  local note = {shape.windows.note}
  for _, gen in ipairs(shape.windows.trend) do
    note[#note + 1] = gen.key
    note[#note + 1] = weights[gen.at]
  end
  redis.call('HSET', record.key, 'boards', shape.counted, 'windows', table.concat(note, ' '))
  -- The record was written with the dedupe window as its expiry; should it have ended
  -- before its fold, it ends again.
  redis.call('EXPIRE', record.key, ttl, 'NX')
end

-- Tallies what each shape gathered since the last flush, then writes every tally.
local function flush()
  for _, text in ipairs(shape_order) do
    local shape = shapes[text]
    if not shape.skip and shape.seats > 0 then
      local op = shape.op
      for _, board in ipairs(shape.boards) do
        tally(board[1], op.concert, shape.seats, shape.capacity, board[2], true)
      end
      windows_tally(op.concert, shape.capacity, shape.windows, shape.seats, shape.weighed)
      shape.seats = 0
      for i in ipairs(shape.weighed) do shape.weighed[i] = 0 end
    end
  end
  write_tallies()
  write_window_tallies()
end

-- Where a record of the old layout says its payment counted: its 'boards' (calendar board
-- keys) and 'windows' note (windows.lua), as windows_refund reads it.
local function legacy_counted_on(record)
  local fields = redis.call('HMGET', record, 'boards', 'windows')
  local counted = counted_nowhere()
  for key in string.gmatch(fields[1] or '', '%S+') do counted.calendar[#counted.calendar + 1] = key end
  if not fields[2] or fields[2] == '' then return counted end
  local words = string.gmatch(fields[2], '%S+')
  local mask, csv
  counted.b, mask, csv = words(), words(), words()
  for i = 1, #mask do counted.windows[i] = string.sub(mask, i, i) == '1' end
  if csv ~= '-' then counted.genres = split_genres(csv) end
  while true do
    local key, weight = words(), words()
    if not weight then break end
    counted.trend[#counted.trend + 1] = {key, tonumber(weight)}
  end
  return counted
end

-- Takes a refund's seats back from the boards its payment was counted on, which
-- `counted_on()` reads from the record. Returns the board entries written.
local function fold_refund(seats, concert, cancelled_key, win, counted_on)
  if is_cancelled(cancelled_key) then return 0 end
  -- The payments gathered so far reach the boards first.
  flush()
  local counted = counted_on()
  local capacity = capacity_of(concert)
  for _, key in ipairs(counted.calendar) do uncount(key, concert, seats, capacity) end
  return #counted.calendar + windows_refund(concert, win, counted, seats)
end

-- Board writes a payment's shape costs: its calendar boards, and its rolling and trending
-- boards overall and per genre, at most, and the entry itself; the entry alone when the
-- shape was met earlier in the call.
local SEEN_COST = 2
local function shape_cost(op)
  return ENTRY_COST + #op.boards + (2 + #op.trend) * (1 + #op.genres)
end

-- Folds one entry, unless it is not the first of the call and its board entries would
-- overrun `room`: returns what it cost, or nil when it waits for the next call.
local function fold_entry(entry, room, first, win, ttl)
  local kind, seats, rest = string.match(entry, '^(%a) (%d+) (.+)$')
  seats = tonumber(seats)
  if kind == 'p' or kind == 'P' then
    local record, weights_text, text
    if kind == 'p' then
      local group, field
      group, field, weights_text, text = string.match(rest, '^(%S+) (%x+) (%S+) (.+)$')
      record = {group = group, field = record_field(field)}
    else
      local key
      key, weights_text, text = string.match(rest, '^(%S+) (%S+) (.+)$')
      record = {key = key}
    end
    local weights = {}
    for w in string.gmatch(weights_text, '[^,-]+') do weights[#weights + 1] = w end
    local shape, cost = shapes[text], SEEN_COST
    if not shape then
      local op = payment_op(text)
      cost = shape_cost(op)
      if not first and cost > room then return nil end
      shape = new_shape(op, win)
      shapes[text] = shape
      shape_order[#shape_order + 1] = text
    end
    fold_payment(shape, seats, record, weights, ttl)
    return cost
  elseif kind == 'r' then
    local concert, group, field, cancelled_key = string.match(rest, '^(%S+) (%S+) (%x+) (%S+)$')
    return ENTRY_COST + fold_refund(seats, concert, cancelled_key, win, function()
      local value = redis.call('HGET', group, record_field(field))
      if not value then return counted_nowhere() end
      return record_counted_on(decode_record(value), win)
    end)
  elseif kind == 'R' then
    local concert, record, cancelled_key = string.match(rest, '^(%S+) (%S+) (%S+)$')
    return ENTRY_COST + fold_refund(seats, concert, cancelled_key, win, function()
      return legacy_counted_on(record)
    end)
  end
  error('not a fold entry')
end

-- Folds entries off the head of the queue while their board writes fit in `budget` (the
-- first one always: the queue moves), writes their tallies, and returns the entries folded.
-- An entry this version cannot read (never written by it) is set aside in REJECTED, kept
-- for the dedupe window, rather than stopping every later call.
local REJECTED = FOLD .. ':rejected'
local function fold(budget, win, ttl)
  local done, spent = 0, 0
  while spent < budget do
    -- A few at a time: an entry is about a kilobyte, and a call folds a handful.
    local entries = redis.call('LRANGE', FOLD, done, done + 7)
    local full = false
    for _, entry in ipairs(entries) do
      local ok, cost = pcall(fold_entry, entry, budget - spent, done == 0, win, ttl)
      if not ok then
        redis.call('RPUSH', REJECTED, entry)
        redis.call('EXPIRE', REJECTED, ttl)
        cost = ENTRY_COST
      elseif not cost then
        full = true
        break
      end
      spent = spent + cost
      done = done + 1
    end
    if full or #entries < 8 then break end
  end
  flush()
  write_live_genres(win)
  if done > 0 then redis.call('LTRIM', FOLD, done, -1) end
  return done
end
