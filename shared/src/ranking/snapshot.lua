-- The snapshots of the live boards: once an hour the tick keeps the top rows of each
-- last-24h, last-7d and trending board, overall and per genre, so that a read shows how each
-- row moved since (compare.lua). Concatenated after boards.lua (forget_pages). Keys
-- (snapshot.rs SNAPSHOT names them too): DETAILS and PAGES (boards.lua's), STATE, the
-- round's state hash, and GENRES, the live genres (a sorted set, every score 0, so that it
-- is walked in name order; windows.lua adds a genre when a payment counts on its live
-- boards). Arguments: now, the time in ms; top, the rows a snapshot keeps (K); half, the
-- trending half-life in ms; budget, the rows one call may copy (a board counting
-- BOARD_COST rows more); slots, JSON, one [board key, snapshot key, trending?] per live
-- board and order, overall (a genre's keys are these with ':genre:<genre>' after them).
-- A snapshot is a hash: concertId -> its competition rank, for the top `top` rows and those
-- tied with the last of them, and '@at' (when it was taken, ms), '@k' (top), '@full' (1 when
-- the board held more rows than the snapshot) and, on a trending board, '@half' (the
-- half-life it was ranked with). No concertId holds '@' (ids.rs). It replaces
-- the one before in one command and ends SNAPSHOT_KEEP seconds later, so a tick that stops
-- leaves no stale comparison behind.
-- A round snapshots every board once: the overall boards, then each live genre's in name
-- order; STATE keeps 'round' (the hour it started in), 'done', and where it stands: 'genre'
-- ('@' for the overall boards) and 'slot'. A new round starts in the first call of an hour
-- after the last round ended; a round that takes longer than an hour goes on, so every genre
-- gets its turn. A genre none of whose boards exists any longer leaves GENRES.
-- Answers {'more', 'boards', n} while the round is not done, else {'done', 'boards', n}: the
-- boards snapshotted.
local STATE, GENRES = KEYS[3], KEYS[4]
local now, top, half = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local budget, slots = tonumber(ARGV[4]), cjson.decode(ARGV[5])
local SNAPSHOT_KEEP, HOUR_MS = 3 * 3600, 3600000
-- What a board costs beyond its rows, in rows: its five commands and the Lua between.
local BOARD_COST = 10
local hour = math.floor(tonumber(now) / HOUR_MS)

local state = redis.call('HMGET', STATE, 'round', 'done', 'genre', 'slot')
local round, done, genre, slot = tonumber(state[1]), state[2] == '1', state[3], tonumber(state[4])
if not round or not genre or not slot or (done and round < hour) then
  round, done, genre, slot = hour, false, '@', 1
end
if done then return {'done', 'boards', 0} end

-- The next live genre after `after` ('@': the first), or nil.
local function next_genre(after)
  local min = after == '@' and '-' or '(' .. after
  return redis.call('ZRANGE', GENRES, min, '+', 'BYLEX', 'LIMIT', 0, 1)[1]
end

-- The keys of `slot` for `genre`.
local function keys_of(genre, slot)
  local s = slots[slot]
  local suffix = genre == '@' and '' or ':genre:' .. genre
  return s[1] .. suffix, s[2] .. suffix, s[3]
end

-- Whether any board of `genre` still exists.
local function any_board(genre)
  local keys = {}
  for i = 1, #slots do keys[i] = (keys_of(genre, i)) end
  return redis.call('EXISTS', unpack(keys)) > 0
end

-- Keeps the top rows of `board` in `snap`, with competition ranks, and the rows tied with
-- the last of them (up to `top` more: a tie at the cut-off is the cut-off's rank, not below
-- it). '@full' says whether the board held more rows than the snapshot: then a row missing
-- from it was below them. Returns the rows copied.
local function snapshot(board, snap, trending)
  local range = redis.call('ZRANGE', board, 0, top - 1, 'WITHSCORES')
  local kept = #range / 2
  if kept == top then
    local last, tied = range[#range], 0
    for i = #range, 2, -2 do
      if range[i] ~= last then break end
      tied = tied + 1
    end
    local more = redis.call('ZRANGE', board, last, last, 'BYSCORE', 'LIMIT', tied, top,
      'WITHSCORES')
    for i = 1, #more do range[#range + 1] = more[i] end
    kept = #range / 2
  end
  local full = redis.call('ZCARD', board) > kept and 1 or 0
  local fields = {'@at', now, '@k', top, '@full', full}
  if trending then fields[#fields + 1], fields[#fields + 2] = '@half', half end
  local last_score, rank = nil, 0
  for i = 1, #range, 2 do
    if range[i + 1] ~= last_score then
      rank = (i + 1) / 2
      last_score = range[i + 1]
    end
    fields[#fields + 1], fields[#fields + 2] = range[i], rank
  end
  redis.call('DEL', snap)
  redis.call('HSET', snap, unpack(fields))
  redis.call('EXPIRE', snap, SNAPSHOT_KEEP)
  return kept
end

-- Each step costs its rows plus BOARD_COST from the budget, a genre found gone the boards
-- it looked at: so a call ends near its budget (one board past it at most), however many
-- genres have gone.
local taken = 0
while not done and budget > 0 do
  if slot > #slots then
    genre, slot = next_genre(genre), 1
    budget = budget - 1
    if not genre then
      done, genre = true, '@'
    end
  elseif slot == 1 and genre ~= '@' and not any_board(genre) then
    redis.call('ZREM', GENRES, genre)
    budget = budget - #slots
    slot = #slots + 1
  else
    local board, snap, trending = keys_of(genre, slot)
    budget = budget - snapshot(board, snap, trending) - BOARD_COST
    taken = taken + 1
    slot = slot + 1
  end
end
redis.call('HSET', STATE, 'round', round, 'done', done and '1' or '0', 'genre', genre, 'slot', slot)
redis.call('EXPIRE', STATE, SNAPSHOT_KEEP)
if taken > 0 then forget_pages() end
return {done and 'done' or 'more', 'boards', taken}
