-- Replies, after promotion.lua: what a call answers (the settings, a token's standing, the
-- wait estimate and the poll interval) and the bookkeeping every reply does.

local function rate()
  return redis.call('HGET', META, 'rate') or ''
end

local PAUSED_FLAG = PAUSED and 1 or 0

-- The door's settings in force (door.rs DoorSettings): {challenge, cost min, cost max}, a
-- cost '' where the queue sets none. Read with an HMGET of its own, after any change this call
-- made: only the calls that answer settings or make a challenge need them.
local function door_settings()
  local door = redis.call('HMGET', SETTINGS, 'challenge', 'challenge-cost-min',
    'challenge-cost-max')
  return {door[1] or 'off', door[2] or '', door[3] or ''}
end

-- The settings in force as configure and summary reply (decoded by `QueueSettings`):
-- {capacity, session ms, admit per tick, idle ms, paused, {mode, sold out, message, max
-- waiting}, {opens at, closes at, pre-queue opens at}, lane before opening (0|1), access,
-- door settings, pace settings {capacity ramp {from, step, every ms, to} or {}, health
-- {alarms (one name a line, '' when none), recovery ms, level ttl ms}, pool or ''}}, from `set`, the fields as read (nil: the
-- default; the schedule's ms as stored, '' when not set). The health settings and the pool are read here
-- with an HMGET of their own: only the calls that answer settings need them.
local function settings_reply(set)
  local ramp = {}
  local from, step, every, to = ramp_parts(set.ramp)
  if from then ramp = {from, step, every, to} end
  local health = redis.call('HMGET', SETTINGS, 'health-alarms', 'health-recovery-ms',
    'health-ttl-ms', 'pool')
  return {tonumber(set.capacity or DEFAULT_CAPACITY),
    tonumber(set.session or DEFAULT_SESSION_MS),
    tonumber(set.admit or DEFAULT_ADMIT_PER_TICK), tonumber(set.idle or DEFAULT_IDLE_MS),
    set.paused and 1 or 0,
    {set.mode or 'queue', set.sold_out and 1 or 0, set.message or '', tonumber(set.max_waiting) or 0},
    {set.opens_at or '', set.closes_at or '', set.prequeue_opens_at or ''},
    set.lane_before_opening and 1 or 0, set.access or 'open', door_settings(),
    {ramp, {health[1] or '', tonumber(health[2]) or HEALTH_RECOVERY_DEFAULT_MS,
      tonumber(health[3]) or HEALTH_TTL_DEFAULT_MS}, health[4] or ''}}
end

-- Meta (the ticket counter among it) lives this long beyond the queue's last buyer reply,
-- settings change or promotion tick: longer than any place can outlive those (a waiter
-- polls within the idle period, or the long one while a long heartbeat is live, a session
-- lasts the session length), so the counter never restarts under a live token; a window
-- more, since keep_meta renews it once per half window at most. The reaper deletes it
-- sooner when it retires the queue.
local KEEP_MS = SESSION_MS + IDLE_MS + WINDOW_MS + tonumber(RETIRE_AFTER_MS)
local function keep_meta()
  -- Renewed once per half window at most: KEEP_MS leaves that much to spare.
  if KEPT_AT and NOW - KEPT_AT < WINDOW_MS / 2 and NOW >= KEPT_AT then return end
  local keep = KEEP_MS
  if long_presence_live() then keep = KEEP_MS - IDLE_MS + LONG_IDLE_MS end
  KEPT_AT = NOW
  redis.call('HSET', META, 'kept-at', NOW)
  redis.call('PEXPIRE', META, keep)
  redis.call('PEXPIRE', PRESENCE, keep)
end

-- 1 while the queue is not known to be in the registry: the caller then adds it and marks
-- it registered. Checked by issue and status, so a failed registration is retried.
local function needs_registration()
  return REGISTERED and 0 or 1
end

-- The expected wait of the waiter at `position` and its range, in ms: three strings (wait,
-- low, high), or '' three times while none is honest: the queue is paused or sold out.
-- The places free one after another. The k-th to free is free now if fewer than capacity
-- sessions are live; else it is the live session with the (k − free)-th earliest end, which
-- frees at its start plus a session's length, not after its end, not before now. The waiter
-- at position p takes the ((p − 1) mod capacity + 1)-th place to free, after
-- ⌊(p − 1) / capacity⌋ earlier rounds of a session each. The live sessions are the last of
-- the active set (by end), so that session is the (capacity − place + 1)-th from its end:
-- one ZRANGE by index from the end, O(log n). None there, or one already ended, means the
-- place is free. `from` (ms, nil: now): no place is taken before it.
-- The wait takes sessions to hold their place the expected length (session_lengths);
-- `low`, the low length; `high`, the high length (sessions running out until the lengths
-- seen say otherwise), each place taken back a tick late.
local function wait_estimate(position, from)
  if PAUSED or SOLD_OUT or CAPACITY < 1 then return '', '', '' end
  local mean, low_mean, high_mean, rest = session_lengths()
  local place = (position - 1) % CAPACITY + 1
  local rounds = math.floor((position - 1) / CAPACITY)
  local start = math.max(NOW, from or NOW)
  local frees_at = {start, start, start}
  local index = place - CAPACITY - 1
  local entry = redis.call('ZRANGE', ACTIVE, index, index, 'WITHSCORES')
  local until_ms = tonumber(entry[2])
  if until_ms and until_ms > NOW then
    local _, since = active_entry(entry[1])
    since = since or until_ms
    -- The expected and the high end: no sooner than the place-th of the live sessions to
    -- end is expected to, each expected to last `rest` yet: the place-th shortest of
    -- CAPACITY exponential residual lives, ln((C + ½) ÷ (C − place + ½)) times `rest`, at
    -- most `rest` itself.
    local share = math.min(1, math.log((CAPACITY + 0.5) / (CAPACITY - place + 0.5)))
    local soonest = rest * share
    local lengths = {{mean, soonest}, {low_mean, 0}, {high_mean - TICK_MS, soonest}}
    for i, length in ipairs(lengths) do
      local frees = math.max(since + length[1], NOW + length[2])
      frees_at[i] = math.max(start, math.min(until_ms, frees))
    end
  end
  return string.format('%d', frees_at[1] - NOW + rounds * mean),
    string.format('%d', frees_at[2] - NOW + rounds * low_mean),
    string.format('%d', frees_at[3] - NOW + TICK_MS + rounds * high_mean)
end

-- The reply issue and status give, and the only place it is built (decoded by `TokenReply`
-- in buyer.rs): {created, status, ticket, position, active_until_ms, wait_ms, present_ms,
-- paused, register, message, drawn, range}. `status` is 'prequeue' (active_until_ms then holds the
-- opening), 'waiting', 'active', 'soldout', a departure,
-- 'unknown', 'limited' (active_until_ms then holds the ms until the window ends), a refusal
-- of a new arrival ('sold-out', 'closed', 'not-open' or 'full' with the ms to retry after in
-- active_until_ms), 'draw-seed' (to the function only: the seed in `wait_ms`), 'no-queue'
-- or 'unregistered'; `wait_ms` is '' when no estimate is honest. `present_ms` is how long
-- the token counts as present after this reply: the idle period, or more for a waiter far
-- from the front (presence_for). `drawn` is 1 when the ticket was placed by the draw, which has happened
-- (the ticket is then the draw value + 1). `range` is a waiter's {low_ms, high_ms} beside
-- `wait_ms` ({'', ''} when no estimate is honest), {} otherwise. Omitted fields are 0 ('' for
-- `wait_ms`, {} for `range`).
local function token_reply(created, status, ticket, position, until_ms, wait_ms, register,
    present_ms, range)
  local drawn = 0
  if DRAW_COMMIT and not BEFORE_OPENING and ticket and ticket >= 1 and ticket <= DRAW_BASE
      and status ~= 'draw-seed' then
    drawn = 1
  end
  return {created, status, ticket or 0, position or 0, until_ms or 0, wait_ms or '',
    present_ms or IDLE_MS, PAUSED_FLAG, register or 0, MESSAGE, drawn, range or {}}
end

-- A pre-queue member's reply before the opening: no position, the opening instead.
local function prequeue_reply(created, ticket)
  keep_meta()
  return token_reply(created, 'prequeue', ticket, 0, OPENS_AT, '', needs_registration())
end

-- The part of the low end of its wait a waiter is told to wait: the function's
-- POLL_AFTER_WAIT_PART (a unit test holds them equal).
local POLL_AFTER_WAIT_PART = 4

-- How long a waiter's poll keeps it present, given the low end of its wait (ms as
-- wait_estimate gives it; '' while no estimate is honest): three times what it is told to
-- wait (a quarter of `low` in whole seconds, as TokenState::poll_after_seconds computes it),
-- at least the idle period and at most LONG_IDLE_MS. From the low end of the range: a wide
-- range never stretches a poll past the turn.
local function presence_for(low)
  if low == '' then return IDLE_MS end
  local told_ms = math.floor(tonumber(low) / (1000 * POLL_AFTER_WAIT_PART)) * 1000
  return math.max(IDLE_MS, math.min(LONG_IDLE_MS, 3 * told_ms))
end

-- A waiter's reply, recording the poll as its heartbeat for as long as presence_for gives.
-- A lane member's position is in the lane; before the opening, unless the lane is admitted
-- then, its estimate counts from the opening. The main line's estimates count the lane's
-- waiters ahead too; its positions do not.
local function waiting_reply(created, user, ticket)
  local position, ahead, from = nil, 0, nil
  if IN_LANE then
    position = redis.call('ZRANK', LANE, user) + 1
    if BEFORE_OPENING and not lane_before_opening() then from = OPENS_AT end
  else
    position = redis.call('ZRANK', WAITING, user) + 1
    if LANE_ON then ahead = redis.call('ZCARD', LANE) end
  end
  local wait, low, high = wait_estimate(position + ahead, from)
  local present_ms = presence_for(low)
  heartbeat(ticket, present_ms)
  keep_meta()
  return token_reply(created, 'waiting', ticket, position, 0, wait, needs_registration(),
    present_ms, {low, high})
end

-- Everyone waiting: the main line and the priority lane.
local function waiting_count()
  local count = redis.call('ZCARD', WAITING)
  if LANE_ON then count = count + redis.call('ZCARD', LANE) end
  return count
end

-- An active buyer's reply: in place of a position, the ms the session began.
local function active_reply(created, ticket, until_ms, since_ms)
  keep_meta()
  return token_reply(created, 'active', ticket, since_ms, until_ms, '', needs_registration())
end

-- Whether the queue is empty and has had no arrival for `idle_after` ms. A queue whose
-- settings name health alarms or a pool is never idle: the promoter keeps watching it for its
-- next buyers.
local function is_idle(idle_after)
  local last_issue = tonumber(redis.call('HGET', META, 'last-issue') or '0')
  return waiting_count() == 0 and live_active_count() == 0
    and NOW - last_issue >= idle_after
    and not POOL and not redis.call('HGET', SETTINGS, 'health-alarms')
end

-- Finds `user`'s entry holding `ticket` (any ticket when nil). Returns the state, the
-- ticket and the session end: 'waiting' or 'active' when live; 'dropped' for a waiter absent
-- for the idle period, 'expired' for a session past its end (a lapsed entry is left for the
-- promoter or reaper, which report what they remove); nil when there is no such entry.
local function find(user, ticket)
  local waiting = redis.call('ZSCORE', WAITING, user)
  if waiting and (ticket == nil or tonumber(waiting) == ticket) then
    waiting = tonumber(waiting)
    if is_present(waiting) then return 'waiting', waiting end
    return 'dropped', waiting
  end
  local state, held, until_ms, since = find_active(user, ticket)
  if state then return state, held, until_ms, since end
  -- The priority lane, last: only its members pay for the look.
  if LANE_ON then
    local laned = redis.call('ZSCORE', LANE, user)
    if laned and (ticket == nil or tonumber(laned) == ticket) then
      IN_LANE = true
      laned = tonumber(laned)
      if is_present(laned) then return 'waiting', laned end
      return 'dropped', laned
    end
  end
  return nil
end

-- Why `user`'s `ticket` holds no place, given what find() said: 'dropped', 'expired',
-- 'paid', 'left' or 'unknown'.
local function departure(state, user, ticket)
  if state == 'dropped' or state == 'expired' then return state end
  return recorded_departure(user, ticket)
end

-- The reply for a token that holds no place: its departure in place of the status.
local function gone_reply(state, user, ticket)
  return token_reply(0, departure(state, user, ticket))
end

-- The reply for a held token that is not active while the queue is sold out, given what
-- find() said: 'soldout', unless its place ended otherwise first (expired, paid, left). A
-- waiter the reaper has already given back (recorded 'given-back'), or whose record is
-- gone, is told 'soldout' too.
local function sold_out_reply(state, user, ticket)
  if state ~= 'waiting' and state ~= 'dropped' then
    local why = departure(state, user, ticket)
    if why ~= 'given-back' and why ~= 'unknown' then return token_reply(0, why) end
  end
  return token_reply(0, 'soldout', ticket)
end
