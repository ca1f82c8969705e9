-- Promotion, after departures.lua: expired sessions taken back, and waiters admitted in
-- ticket order, the priority lane first, within capacity.

-- Removes up to `limit` expired sessions; returns them as {user, ticket} pairs. Counting
-- never depends on this: expired sessions are excluded by score wherever actives are
-- counted or checked. Only the promoter and reaper call it, so they can report each one.
local function purge_expired(limit)
  local users = redis.call('ZRANGEBYSCORE', ACTIVE, '-inf', NOW, 'LIMIT', 0, limit)
  local expired, lengths = {}, {}
  for _, user in ipairs(users) do
    local ticket, length = close_session(user)
    expired[#expired + 1] = {user, ticket or 0}
    if length then lengths[#lengths + 1] = length end
  end
  note_session_lengths(lengths)
  record_departures(expired, 'expired')
  return expired
end

-- Admits `user` now; `told`: its buyer learns it in this call's reply (admitted on joining).
local function activate(user, ticket, told)
  redis.call('ZADD', ACTIVE, NOW + SESSION_MS, user)
  redis.call('HSET', TICKETS, user, active_entry_text(ticket, NOW + SESSION_MS, told))
  -- The queue's first session: what sessions last at least grows from now, until a fold.
  if not meta[10] then
    meta[10] = string.format('0:1000:%d', NOW)
    SESSION_LOW = {0, 1000, NOW}
    redis.call('HSET', META, 'session-low', meta[10])
  end
  if ticket > ADMITTED_THROUGH then
    ADMITTED_THROUGH = ticket
    redis.call('HSET', META, 'admitted-through', ticket)
  end
end

-- Moves the oldest present waiters to active, up to `limit` and the free capacity, and
-- drops absent waiters met on the way. Nothing moves while the queue is paused or sold out.
-- Returns the admitted as {user, ticket, active until} and the dropped as {user, ticket}.
-- At the first promotion after the opening, records how many the draw placed: the line's
-- entries with a draw ticket (ZCOUNT, O(log n)), kept with the seed in settings.
local function record_draw()
  if DRAW_COMMIT and OPENS_AT and not BEFORE_OPENING and not DRAW_MEMBERS then
    DRAW_MEMBERS = redis.call('ZCOUNT', WAITING, 1, DRAW_BASE)
    redis.call('HSET', SETTINGS, 'draw-members', DRAW_MEMBERS)
  end
end

local function promote(limit)
  local admitted, dropped = {}, {}
  record_draw()
  -- Before the opening nobody is admitted, but the priority lane with laneBeforeOpening.
  if PAUSED or SOLD_OUT or (BEFORE_OPENING and not (LANE_ON and lane_before_opening())) then
    return admitted, dropped
  end
  local free = math.min(CAPACITY - live_active_count(), limit, SLICE)
  -- Bounds the work one call spends skipping absent waiters.
  local budget = free + SLICE
  -- The writes are gathered and sent as one command each: the per-admission cost is what
  -- keeps a slice within about a millisecond.
  local scores, tickets = {}, {}
  local last_ticket = 0
  -- The priority lane first, then the main line, each in ticket order.
  local lines = {WAITING}
  if LANE_ON then lines = BEFORE_OPENING and {LANE} or {LANE, WAITING} end
  for _, line in ipairs(lines) do
    local removed = {}
    while #admitted < free and #admitted + #dropped < budget do
      local want = math.min(free - #admitted, budget - #admitted - #dropped)
      local head = redis.call('ZRANGE', line, #removed, #removed + want - 1, 'WITHSCORES')
      if #head == 0 then break end
      for i = 1, #head, 2 do
        local user, ticket = head[i], tonumber(head[i + 1])
        removed[#removed + 1] = user
        if is_present(ticket) then
          scores[#scores + 1] = NOW + SESSION_MS
          scores[#scores + 1] = user
          tickets[#tickets + 1] = user
          tickets[#tickets + 1] = active_entry_text(ticket, NOW + SESSION_MS)
          admitted[#admitted + 1] = {user, ticket, NOW + SESSION_MS}
          last_ticket = math.max(last_ticket, ticket)
        else
          dropped[#dropped + 1] = {user, ticket}
        end
      end
    end
    if #removed > 0 then redis.call('ZREM', line, unpack(removed)) end
  end
  if #admitted > 0 then
    redis.call('ZADD', ACTIVE, unpack(scores))
    redis.call('HSET', TICKETS, unpack(tickets))
    redis.call('HINCRBY', META, 'admitted', #admitted)
    if last_ticket > ADMITTED_THROUGH then
      ADMITTED_THROUGH = last_ticket
      redis.call('HSET', META, 'admitted-through', last_ticket)
    end
  end
  record_departures(dropped, 'dropped')
  if #admitted > 0 then fold_session_lengths() end
  return admitted, dropped
end
