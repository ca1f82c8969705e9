-- Board writes every ranking script shares; the fold, apply and tick scripts follow this
-- text in one script. KEYS[1] is the concert details hash: concertId -> '<updatedAt ms> <capacity> <json>';
-- KEYS[2] the page cache (page.lua), which a call that writes boards or details deletes.
-- A seat board scores a concert -seats; its rate board (the key with ':board:' after the
-- hash tag made ':rate:') scores it -floor(seats * 1e6 / capacity), for concerts whose
-- capacity is known. Each key written gets its expiry once per call, from flush_expiries().
-- A board whose expiry never moves (`fixed`: the calendar boards) gets it only in a call
-- that adds a concert to it, so in the one that creates it.
local DETAILS, PAGES = KEYS[1], KEYS[2]
local expiries, capacities, rate_keys = {}, {}, {}

local function rate_key(key)
  local rate = rate_keys[key]
  if not rate then
    rate = string.gsub(key, ':{rk}:board:', ':{rk}:rate:', 1)
    rate_keys[key] = rate
  end
  return rate
end

-- Negated millionths of sell-through, as a whole number.
local function rate_score(seats, capacity)
  return string.format('%d', -math.floor(seats * 1000000 / capacity))
end

-- The concert's capacity from its details, or nil; read once per script call.
local function capacity_of(concert)
  local capacity = capacities[concert]
  if capacity == nil then
    local stored = redis.call('HGET', DETAILS, concert)
    capacity = stored and tonumber(string.match(stored, '^%d+ (%d+) ')) or false
    capacities[concert] = capacity
  end
  return capacity or nil
end

-- Notes that a concert's capacity is now `capacity` (nil: unknown).
local function set_capacity(concert, capacity)
  capacities[concert] = capacity or false
end

-- Sets the concert's entry on the rate board `key` for `seats`; `expires_at` (0: never) is
-- the board's expiry.
local function rate(key, concert, seats, capacity, expires_at, fixed)
  local added = redis.call('ZADD', key, rate_score(seats, capacity), concert)
  if added == 1 or not fixed then expiries[key] = expires_at end
end

-- Adds `seats` to the concert on `key`, and rewrites its rate entry when the capacity is
-- known. Returns the concert's new seat total.
local function count(key, concert, seats, capacity, expires_at, fixed)
  local total = -tonumber(redis.call('ZINCRBY', key, -seats, concert))
  if total == seats or not fixed then expiries[key] = expires_at end
  if capacity then rate(rate_key(key), concert, total, capacity, expires_at, fixed) end
  return total
end

-- Sums of seats per (key, member), kept in the order first added, so that a batch writes
-- each once: add_sum gathers, write_sums hands each sum to a writer and empties them. An
-- entry is {key, member, seats, capacity, expires_at, fixed}; a later expiry wins.
local function new_sums()
  return {entries = {}, order = {}}
end

local function add_sum(sums, key, member, seats, capacity, expires_at, fixed)
  local id = key .. ' ' .. member
  local t = sums.entries[id]
  if t then
    t[3] = t[3] + seats
    if expires_at and expires_at > t[5] then t[5] = expires_at end
  else
    sums.entries[id] = {key, member, seats, capacity or false, expires_at, fixed}
    sums.order[#sums.order + 1] = id
  end
end

local function write_sums(sums, write)
  for _, id in ipairs(sums.order) do write(unpack(sums.entries[id], 1, 6)) end
  sums.entries, sums.order = {}, {}
end

-- Seats the fold (fold.lua) has taken and not yet put on the boards, one sum per (board,
-- concert): many payments for one concert write each board once. write_tallies() counts
-- them, in order; the fold calls it before a refund and at its end.
local board_sums = new_sums()
local function tally(key, concert, seats, capacity, expires_at, fixed)
  add_sum(board_sums, key, concert, seats, capacity, expires_at, fixed)
end

local function write_tallies()
  write_sums(board_sums, count)
end

-- Takes back up to `seats` from the concert on `key`: at zero it leaves the board and its
-- rate board. Returns the seats taken.
local function uncount(key, concert, seats, capacity)
  local score = redis.call('ZSCORE', key, concert)
  if not score then return 0 end
  local held = -tonumber(score)
  if held <= seats then
    redis.call('ZREM', key, concert)
    if capacity then redis.call('ZREM', rate_key(key), concert) end
    return held
  end
  redis.call('ZINCRBY', key, seats, concert)
  -- XX: the rate board lives as long as its seat board; never create one without expiry.
  if capacity then redis.call('ZADD', rate_key(key), 'XX', rate_score(held - seats, capacity), concert) end
  return seats
end

-- Sends each remembered expiry once.
local function flush_expiries()
  for key, expires_at in pairs(expiries) do
    if expires_at > 0 then redis.call('EXPIREAT', key, expires_at) end
  end
  expiries = {}
end

-- The boards or details changed: every page kept in the page cache is dropped. UNLINK, so
-- that a cache of many pages is freed off the script's thread.
local function forget_pages()
  redis.call('UNLINK', PAGES)
end
