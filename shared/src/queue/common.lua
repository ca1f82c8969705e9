-- Shared prelude of every queue script; the script's own body follows it.
-- KEYS: waiting, active, active-tickets, meta, settings, the two rotating rate-limit
-- counters, then the rotating heartbeat bitmaps.
-- ARGV: the environment's default capacity, session ms, idle ms and admit per tick, the ms
-- after which an empty queue without arrivals retires, then the script's own arguments
-- from ARGV[ARG]. A queue's own settings (PUT .../settings) override the defaults, so
-- every script sees the settings in force at that moment.
-- Time is the server's clock (TIME), so Lambdas with skewed clocks still agree.
local WAITING, ACTIVE, TICKETS, META, SETTINGS = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local RATE_KEYS = {KEYS[6], KEYS[7]}
local FIRST_SEEN = 8
local SEEN_SLOTS = #KEYS - FIRST_SEEN + 1
local ARG = 6
-- Most admissions (and expired sessions removed) per script call, so that no call holds
-- Redis for more than about a millisecond; a promoter that may admit more calls again.
local SLICE = 32

local stored = redis.call('HMGET', SETTINGS, 'capacity', 'session-ms', 'idle-ms',
  'admit-per-tick', 'paused', 'presence-grace-until')
local CAPACITY = tonumber(stored[1] or ARGV[1])
local SESSION_MS = tonumber(stored[2] or ARGV[2])
local IDLE_MS = tonumber(stored[3] or ARGV[3])
local ADMIT_PER_TICK = tonumber(stored[4] or ARGV[4])
local PAUSED = stored[5] == '1'
-- Until this instant every waiter counts as present: set when the idle period changes,
-- because heartbeats recorded in windows of the old length cannot be read under the new.
local PRESENCE_GRACE_UNTIL = tonumber(stored[6] or '0')
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
  local key = KEYS[FIRST_SEEN + slot]
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
  if NOW < PRESENCE_GRACE_UNTIL then return true end
  for window = CURRENT_WINDOW, FIRST_LIVE_WINDOW, -1 do
    local slot = window % SEEN_SLOTS
    if window_in_slot(slot) == window and redis.call('GETBIT', KEYS[FIRST_SEEN + slot], ticket) == 1 then
      return true
    end
  end
  return false
end

local function live_active_count()
  return redis.call('ZCOUNT', ACTIVE, '(' .. NOW, '+inf')
end

-- An active buyer's ticket and the instant the session began, stored as "ticket:since".
local function active_entry(user)
  local raw = redis.call('HGET', TICKETS, user)
  if not raw then return nil end
  local ticket, since = string.match(raw, '^(%d+):(%d+)$')
  return tonumber(ticket), tonumber(since)
end

local function end_session(user)
  redis.call('ZREM', ACTIVE, user)
  redis.call('HDEL', TICKETS, user)
end

-- Removes up to `limit` expired sessions; returns them as {user, ticket} pairs. Counting
-- never depends on this: expired sessions are excluded by score wherever actives are
-- counted or checked. Only the promoter and reaper call it, so they can report each one.
local function purge_expired(limit)
  local users = redis.call('ZRANGEBYSCORE', ACTIVE, '-inf', NOW, 'LIMIT', 0, limit)
  local expired = {}
  for _, user in ipairs(users) do
    local ticket = active_entry(user)
    expired[#expired + 1] = {user, ticket or 0}
    end_session(user)
  end
  return expired
end

local function activate(user, ticket)
  redis.call('ZADD', ACTIVE, NOW + SESSION_MS, user)
  redis.call('HSET', TICKETS, user, ticket .. ':' .. NOW)
  if ticket > tonumber(redis.call('HGET', META, 'admitted-through') or '0') then
    redis.call('HSET', META, 'admitted-through', ticket)
  end
end

-- Moves the oldest present waiters to active, up to `limit` and the free capacity, and
-- drops absent waiters met on the way. Nothing moves while the queue is paused.
-- Returns the admitted as {user, ticket, active until} and the dropped as {user, ticket}.
local function promote(limit)
  local admitted, dropped = {}, {}
  if PAUSED then return admitted, dropped end
  local free = math.min(CAPACITY - live_active_count(), limit, SLICE)
  -- Bounds the work one call spends skipping absent waiters.
  local budget = free + SLICE
  -- The writes are gathered and sent as one command each: the per-admission cost is what
  -- keeps a slice within about a millisecond.
  local removed, scores, tickets = {}, {}, {}
  local last_ticket = 0
  while #admitted < free and #admitted + #dropped < budget do
    local want = math.min(free - #admitted, budget - #admitted - #dropped)
    local head = redis.call('ZRANGE', WAITING, #removed, #removed + want - 1, 'WITHSCORES')
    if #head == 0 then break end
    for i = 1, #head, 2 do
      local user, ticket = head[i], tonumber(head[i + 1])
      removed[#removed + 1] = user
      if is_present(ticket) then
        scores[#scores + 1] = NOW + SESSION_MS
        scores[#scores + 1] = user
        tickets[#tickets + 1] = user
        tickets[#tickets + 1] = ticket .. ':' .. NOW
        admitted[#admitted + 1] = {user, ticket, NOW + SESSION_MS}
        last_ticket = ticket
      else
        dropped[#dropped + 1] = {user, ticket}
      end
    end
  end
  if #removed > 0 then redis.call('ZREM', WAITING, unpack(removed)) end
  if #admitted > 0 then
    redis.call('ZADD', ACTIVE, unpack(scores))
    redis.call('HSET', TICKETS, unpack(tickets))
    redis.call('HINCRBY', META, 'admitted', #admitted)
    -- Admission is in ticket order, so the last admitted is the highest so far.
    if last_ticket > tonumber(redis.call('HGET', META, 'admitted-through') or '0') then
      redis.call('HSET', META, 'admitted-through', last_ticket)
    end
  end
  return admitted, dropped
end

local function rate()
  return redis.call('HGET', META, 'rate') or ''
end

local PAUSED_FLAG = PAUSED and 1 or 0

-- Meta (the ticket counter among it) lives this long beyond the queue's last buyer reply,
-- settings change or promotion tick: longer than any place can outlive those (a waiter
-- polls within the idle period, a session lasts the session length), so the counter never
-- restarts under a live token. The reaper deletes it sooner when it retires the queue.
local KEEP_MS = SESSION_MS + IDLE_MS + tonumber(ARGV[5])
local function keep_meta()
  redis.call('PEXPIRE', META, KEEP_MS)
end

-- 1 while the queue is not known to be in the registry: the caller then adds it and marks
-- it registered. Checked by issue and status, so a failed registration is retried.
local function needs_registration()
  return redis.call('HEXISTS', META, 'registered') == 0 and 1 or 0
end

-- The reply every buyer-facing script gives for a token:
-- {created, status, ticket, position, active_until_ms, rate, idle_ms, paused, register}.
local function waiting_reply(created, user, ticket)
  keep_meta()
  return {created, 'waiting', ticket, redis.call('ZRANK', WAITING, user) + 1, 0, rate(),
    IDLE_MS, PAUSED_FLAG, needs_registration()}
end

local function active_reply(created, ticket, until_ms)
  keep_meta()
  return {created, 'active', ticket, 0, until_ms, rate(), IDLE_MS, PAUSED_FLAG,
    needs_registration()}
end

local GONE = {0, 'gone', 0, 0, 0, '', IDLE_MS, PAUSED_FLAG, 0}

-- Whether the queue is empty and has had no arrival for `idle_after` ms.
local function is_idle(idle_after)
  local last_issue = tonumber(redis.call('HGET', META, 'last-issue') or '0')
  return redis.call('ZCARD', WAITING) == 0 and live_active_count() == 0
    and NOW - last_issue >= idle_after
end

-- Finds the live waiting or active entry for `user` holding `ticket` (any ticket when
-- nil). Returns 'waiting'|'active'|nil, ticket, session end. A lapsed entry is left for
-- the promoter or reaper, which report what they remove.
local function find(user, ticket)
  local waiting = redis.call('ZSCORE', WAITING, user)
  if waiting and (ticket == nil or tonumber(waiting) == ticket) then
    waiting = tonumber(waiting)
    if is_present(waiting) then return 'waiting', waiting end
    return nil
  end
  local until_ms = redis.call('ZSCORE', ACTIVE, user)
  if until_ms then
    local held = active_entry(user)
    until_ms = tonumber(until_ms)
    if (ticket == nil or held == ticket) and until_ms > NOW then
      return 'active', held, until_ms
    end
  end
  return nil
end
