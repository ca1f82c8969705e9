-- Rolling windows (last-24h, last-7d) and trending boards: what a payment adds and a refund
-- takes back. Concatenated after boards.lua (tally, uncount, capacity_of) and before
-- fold.lua, which calls windows_shape, windows_tally and windows_refund. roll.lua (the tick) takes buckets
-- that left a window off its boards.
-- win (built by Rust, keys.rs, one per call): g, the bucket length in ms; state, the hash of
-- each window's watermark (the last bucket already taken off); genre, the infix of a genre
-- board; windows, one {name, hash (bucket hash key without its index), board (overall
-- board key), n (buckets in the window), keep (seconds a board or bucket hash outlives
-- its last write)} per window; live, the live genres (write_live_genres); calendar and trending, the key of a calendar board and of a
-- trending generation without their period, bucket or index (record.lua names a refund's
-- boards from them), and periods, the calendar periods in Period::ALL's order. A payment's
-- op carries b, its bucket, and trend, one
-- {key, expires_at} per trending generation holding it (its weight on each comes with the
-- payment, fold.lua).
-- A record of the old layout (one hash per payment) keeps a note of what it counted here:
-- '<b> <mask> <genres|-> [<key> <weight>]...', mask having a 1 for each window it was
-- counted on. A record of today's layout keeps the same facts (record.lua).
-- The watermarks, read once per script call: only the tick moves them.
local window_marks = nil

-- What this call's payments add to bucket hash fields, one sum per (hash, field): a batch of
-- payments for one concert writes each once. Written before any other command and at the end
-- (write_window_tallies); their boards go through boards.lua's tally.
local field_sums = new_sums()

local function tally_field(hash, field, seats)
  add_sum(field_sums, hash, field, seats)
end

local function hincrby(hash, field, seats)
  redis.call('HINCRBY', hash, field, seats)
end

-- The genres this call's payments counted on live boards, and the latest expiry of those
-- boards: write_live_genres, at the fold's end, adds them to the live genres (win.live, walked by the hourly
-- snapshots, snapshot.lua), which ends with the last of its genres' live boards.
local live_genres, live_seen, live_until = {}, {}, 0

local function note_live(genres, expires_at)
  for _, g in ipairs(genres) do
    if not live_seen[g] then
      live_seen[g] = true
      live_genres[#live_genres + 1] = g
    end
  end
  if expires_at > live_until then live_until = expires_at end
end

local function write_live_genres(win)
  if #live_genres == 0 then return end
  local args = {}
  for _, g in ipairs(live_genres) do args[#args + 1], args[#args + 2] = 0, g end
  redis.call('ZADD', win.live, unpack(args))
  if redis.call('EXPIRETIME', win.live) < live_until then
    redis.call('EXPIREAT', win.live, live_until)
  end
  live_genres, live_seen, live_until = {}, {}, 0
end

local function write_window_tallies()
  write_sums(field_sums, hincrby)
end

local function genre_boards(board, infix, genres)
  local boards = {board}
  for _, g in ipairs(genres) do boards[#boards + 1] = board .. infix .. g end
  return boards
end

-- Takes amount off concert's trending score on key. Scores are sums of doubles, so what is
-- left after the last refund may be a rounding residue: within a 10^-12 of the score it
-- counts as nothing and the entry leaves the board.
local function unweigh(key, concert, amount)
  local score = redis.call('ZSCORE', key, concert)
  if not score then return end
  local total = -tonumber(score)
  if total - amount <= total * 1e-12 then
    redis.call('ZREM', key, concert)
  else
    redis.call('ZINCRBY', key, amount, concert)
  end
end

-- Where a payment shape (fold.lua) counts beyond the calendar: the rolling boards whose
-- window still holds its bucket, with the bucket hash fields, and the live trending
-- generations. Returns {rolling = {{key, expires_at}...}, fields = {{hash, field}...},
-- windows = {counted?...} in win.windows' order, trend = {{at (index in op.trend), key,
-- boards, expires_at}...}, note = the start of an old-layout record's note}.
local function windows_shape(op, win, now_ms)
  local now = math.floor(now_ms / 1000)
  local cur = math.floor(now_ms / win.g)
  if not window_marks then
    local names = {}
    for i, w in ipairs(win.windows) do names[i] = w.name end
    window_marks = redis.call('HMGET', win.state, unpack(names))
  end
  local marks = window_marks
  local field = op.concert .. ' ' .. table.concat(op.genres, ',')
  local shape, mask = {rolling = {}, fields = {}, trend = {}, windows = {}}, ''
  for i, w in ipairs(win.windows) do
    local oldest = cur - w.n
    local mark = tonumber(marks[i])
    if not mark then
      -- No watermark yet: nothing older than the window was ever counted.
      redis.call('HSET', win.state, w.name, oldest)
      mark = oldest
      marks[i] = oldest
    end
    if op.b > math.max(mark, oldest) then
      local expires_at = now + w.keep
      for _, key in ipairs(genre_boards(w.board, win.genre, op.genres)) do
        shape.rolling[#shape.rolling + 1] = {key, expires_at}
      end
      local hash = w.hash .. op.b
      shape.fields[#shape.fields + 1] = {hash, field}
      expiries[hash] = math.floor((op.b + 1) * win.g / 1000) + w.keep
      mask = mask .. '1'
      shape.windows[i] = true
      note_live(op.genres, expires_at)
    else
      mask = mask .. '0'
    end
  end
  expiries[win.state] = now + win.state_keep
  shape.note = op.b .. ' ' .. mask .. ' ' ..
    (#op.genres > 0 and table.concat(op.genres, ',') or '-')
  for at, gen in ipairs(op.trend) do
    local key, expires_at = gen[1], gen[2]
    if expires_at > now then
      shape.trend[#shape.trend + 1] = {at = at, key = key, expires_at = expires_at,
        boards = genre_boards(key, win.genre, op.genres)}
      note_live(op.genres, expires_at)
    end
  end
  return shape
end

-- Tallies `seats` on a shape's rolling boards and bucket fields, and `weighed[i]` (seats
-- times their weight) on its i-th live trending generation.
local function windows_tally(concert, capacity, shape, seats, weighed)
  for _, board in ipairs(shape.rolling) do
    tally(board[1], concert, seats, capacity, board[2])
  end
  for _, f in ipairs(shape.fields) do tally_field(f[1], f[2], seats) end
  for i, gen in ipairs(shape.trend) do
    for _, board in ipairs(gen.boards) do
      tally(board, concert, weighed[i], nil, gen.expires_at)
    end
  end
end

-- Takes a refund's seats back from the rolling boards (only while the payment's bucket is
-- still in the window: its field is still in the bucket hash) and from the trending
-- generations the payment counted on, by the same weights. `counted` says where the payment
-- counted: {b, windows = {counted?, ...} in win.windows' order, genres, trend = {{board,
-- weight}, ...}} (record.lua's record_counted_on; fold.lua's legacy_counted_on for a record
-- of the old layout). Returns the board entries written.
local function windows_refund(concert, win, counted, seats)
  local field = concert .. ' ' .. table.concat(counted.genres, ',')
  local capacity = capacity_of(concert)
  local written = 0
  for i, w in ipairs(win.windows) do
    if counted.windows[i] then
      local hash = w.hash .. counted.b
      local held = tonumber(redis.call('HGET', hash, field))
      if held then
        local take = math.min(seats, held)
        if held <= take then
          redis.call('HDEL', hash, field)
        else
          redis.call('HINCRBY', hash, field, -take)
        end
        for _, key in ipairs(genre_boards(w.board, win.genre, counted.genres)) do
          uncount(key, concert, take, capacity)
          written = written + 1
        end
      end
    end
  end
  for _, gen in ipairs(counted.trend) do
    for _, board in ipairs(genre_boards(gen[1], win.genre, counted.genres)) do
      unweigh(board, concert, seats * gen[2])
      written = written + 1
    end
  end
  return written
end
