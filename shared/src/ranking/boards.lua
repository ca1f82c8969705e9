-- Board write helpers shared by the scripts that write boards (apply.lua, roll.lua), which
-- are concatenated after this file. Scores are negated seats. A rate board (the seat key
-- with ':board:' replaced by ':rate:') holds negated millionths of sell-through.
-- (Helper C's minimal version, same signatures as the issue 23 contract: the lead keeps
-- helper A's at merge.)
local expiries = {}

local function rate_key(key)
  return (string.gsub(key, ':board:', ':rate:', 1))
end

-- The capacity of a concert, or nil when unknown. (Minimal: no details hash here.)
local function capacity_of(concert)
  return nil
end

-- Counts seats for concert on key; writes the rate entry when capacity is known; the key
-- expires at expires_at (0 = never), set once per key at flush_expiries(). Returns the new
-- seat total.
local function count(key, concert, seats, capacity, expires_at)
  local total = -tonumber(redis.call('ZINCRBY', key, -seats, concert))
  if capacity and capacity > 0 then
    local rate = rate_key(key)
    redis.call('ZADD', rate, -math.floor(total * 1000000 / capacity), concert)
    expiries[rate] = expires_at
  end
  expiries[key] = expires_at
  return total
end

-- Takes back up to seats from concert on key; an entry that would reach 0 or less leaves
-- key and its rate board. A missing entry is left alone. Returns the seats taken.
local function uncount(key, concert, seats, capacity)
  local score = redis.call('ZSCORE', key, concert)
  if not score then return 0 end
  local total = -tonumber(score)
  if total <= seats then
    redis.call('ZREM', key, concert)
    redis.call('ZREM', rate_key(key), concert)
    return total
  end
  redis.call('ZINCRBY', key, seats, concert)
  if capacity and capacity > 0 then
    redis.call('ZADD', rate_key(key), -math.floor((total - seats) * 1000000 / capacity), concert)
  end
  return seats
end

-- Sets every expiry count() remembered, once per key.
local function flush_expiries()
  for key, expires_at in pairs(expiries) do
    if expires_at > 0 then redis.call('EXPIREAT', key, expires_at) end
  end
  expiries = {}
end
