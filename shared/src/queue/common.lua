-- Shared prelude of every queue script; the script's own body follows it.
-- KEYS: waiting, active, active-tickets, meta, then the rotating heartbeat bitmaps.
-- ARGV: capacity, session ms, idle ms, then the script's own arguments.
-- Time is the server's clock (TIME), so Lambdas with skewed clocks still agree.
local WAITING, ACTIVE, TICKETS, META = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local SEEN_SLOTS = #KEYS - 4
local CAPACITY = tonumber(ARGV[1])
local SESSION_MS = tonumber(ARGV[2])
local IDLE_MS = tonumber(ARGV[3])
-- The idle period spans SEEN_SLOTS - 1 windows; one more slot is being recycled.
local WINDOW_MS = math.ceil(IDLE_MS / (SEEN_SLOTS - 1))

local clock = redis.call('TIME')
local NOW = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local CURRENT_WINDOW = math.floor(NOW / WINDOW_MS)
-- Only windows lying wholly inside the idle period count, so nobody unseen for the whole
-- idle period is ever treated as present.
local FIRST_LIVE_WINDOW = math.floor((NOW - IDLE_MS) / WINDOW_MS) + 1

local slot_windows = nil
local function window_in_slot(slot)
  if not slot_windows then
    local fields = {}
    for i = 0, SEEN_SLOTS - 1 do fields[#fields + 1] = 'seen-window:' .. i end
    slot_windows = redis.call('HMGET', META, unpack(fields))
  end
  return tonumber(slot_windows[slot + 1])
end

-- Records that the holder of `ticket` was seen now.
local function heartbeat(ticket)
  local slot = CURRENT_WINDOW % SEEN_SLOTS
  local key = KEYS[5 + slot]
  if window_in_slot(slot) ~= CURRENT_WINDOW then
    redis.call('UNLINK', key)
    redis.call('HSET', META, 'seen-window:' .. slot, CURRENT_WINDOW)
    slot_windows[slot + 1] = CURRENT_WINDOW
  end
  redis.call('SETBIT', key, ticket, 1)
  redis.call('PEXPIRE', key, IDLE_MS + 2 * WINDOW_MS)
end

-- Whether the holder of `ticket` was seen within the idle period.
local function is_present(ticket)
  for window = CURRENT_WINDOW, FIRST_LIVE_WINDOW, -1 do
    local slot = window % SEEN_SLOTS
    if window_in_slot(slot) == window and redis.call('GETBIT', KEYS[5 + slot], ticket) == 1 then
      return true
    end
  end
  return false
end

local function live_active_count()
  return redis.call('ZCOUNT', ACTIVE, '(' .. NOW, '+inf')
end

-- Drops up to `limit` expired sessions. Counting never depends on this: expired sessions
-- are excluded by score wherever actives are counted or checked.
local function purge_expired(limit)
  local expired = redis.call('ZRANGEBYSCORE', ACTIVE, '-inf', NOW, 'LIMIT', 0, limit)
  if #expired > 0 then
    redis.call('ZREM', ACTIVE, unpack(expired))
    redis.call('HDEL', TICKETS, unpack(expired))
  end
  return #expired
end

local function activate(user, ticket)
  redis.call('ZADD', ACTIVE, NOW + SESSION_MS, user)
  redis.call('HSET', TICKETS, user, ticket)
end

-- Moves the oldest present waiters to active, up to `limit` and the free capacity, and
-- drops absent waiters met on the way. Returns admitted, dropped.
local function promote(limit)
  purge_expired(1000)
  local free = math.min(CAPACITY - live_active_count(), limit)
  local admitted, dropped = 0, 0
  -- Bounds the work one call spends skipping absent waiters.
  local budget = free + 1000
  while admitted < free and admitted + dropped < budget do
    local want = math.min(free - admitted, 500)
    local head = redis.call('ZRANGE', WAITING, 0, want - 1, 'WITHSCORES')
    if #head == 0 then break end
    for i = 1, #head, 2 do
      local user, ticket = head[i], tonumber(head[i + 1])
      redis.call('ZREM', WAITING, user)
      if is_present(ticket) then
        activate(user, ticket)
        admitted = admitted + 1
      else
        dropped = dropped + 1
      end
    end
  end
  if admitted > 0 then redis.call('HINCRBY', META, 'admitted', admitted) end
  return admitted, dropped
end

local function rate()
  return redis.call('HGET', META, 'rate') or ''
end

-- The reply every buyer-facing script gives for a token it found:
-- {created, status, ticket, position, active_until_ms, rate}.
local function waiting_reply(created, user, ticket)
  return {created, 'waiting', ticket, redis.call('ZRANK', WAITING, user) + 1, 0, rate()}
end

local function active_reply(created, ticket, until_ms)
  return {created, 'active', ticket, 0, until_ms, rate()}
end

local GONE = {0, 'gone', 0, 0, 0, ''}

-- Finds the waiting or active entry for `user` holding `ticket` (any ticket when nil),
-- removing it when it lapsed. Returns 'waiting'|'active'|nil, ticket, session end.
local function find(user, ticket)
  local waiting = redis.call('ZSCORE', WAITING, user)
  if waiting and (ticket == nil or tonumber(waiting) == ticket) then
    waiting = tonumber(waiting)
    if is_present(waiting) then return 'waiting', waiting end
    redis.call('ZREM', WAITING, user)
    return nil
  end
  local until_ms = redis.call('ZSCORE', ACTIVE, user)
  if until_ms then
    local held = tonumber(redis.call('HGET', TICKETS, user))
    if ticket == nil or held == ticket then
      until_ms = tonumber(until_ms)
      if until_ms > NOW then return 'active', held, until_ms end
      redis.call('ZREM', ACTIVE, user)
      redis.call('HDEL', TICKETS, user)
    end
  end
  return nil
end
