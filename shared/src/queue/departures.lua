-- Departures, after sessions.lua: a session ended, and why a ticket lost its place, recorded
-- for GONE_MS.

-- What a buyer admitted by a promotion waits, on average, until its next poll shows it its
-- turn: half the shortest poll interval (1 s, TokenState::poll_after_seconds).
local SEE_TURN_MS = 500

-- Ends `user`'s session (live or lapsed) and returns its ticket and how long it held its
-- place in ms: until now, which for a lapsed session is the tick that takes the place back
-- (at most a tick past its end).
local function close_session(user)
  local until_ms = tonumber(redis.call('ZSCORE', ACTIVE, user))
  local ticket, since, told = active_entry(user)
  redis.call('ZREM', ACTIVE, user)
  redis.call('HDEL', TICKETS, user)
  if not until_ms or not since then return ticket, nil end
  local length = math.max(0, math.min(until_ms + TICK_MS, NOW) - since)
  -- A buyer admitted while waiting learns it at its next poll, which the place waits for too;
  -- one admitted on joining knew at once. Its length counts that wait as well: the waiters'
  -- sessions, which the estimates are for, all begin with it.
  if told then length = length + SEE_TURN_MS end
  return ticket, length
end

-- Of two hashes used in turn, one per period of `period_ms`, the one for the current period
-- (its parity picks it), the period, and whether it starts afresh: one still holding an
-- older period is cleared first. `mark` names the meta fields that say which period each
-- holds.
local function current_of_two(keys, mark, period_ms)
  local period = math.floor(NOW / period_ms)
  local slot = period % 2
  if tonumber(redis.call('HGET', META, mark .. slot)) ~= period then
    redis.call('UNLINK', keys[slot + 1])
    redis.call('HSET', META, mark .. slot, period)
    return keys[slot + 1], period, true
  end
  return keys[slot + 1], period, false
end

-- Why tickets lost their place, so that a buyer can be told: ticket → "reason user", the
-- reason 'expired', 'paid', 'dropped', 'left' or 'given-back' (a sold-out queue's line).
-- The user is kept because a queue's ticket numbers restart after it retires: an old token
-- naming a reused number is told nothing of the buyer who holds it now. Two hashes used in turn, one per generation of GONE_MS: a
-- record lives one to two generations, so the hashes hold the departures of two generations
-- at most, and each expires on its own once no longer written. A generation outlasts the
-- longest poll interval a waiter is told, so a buyer who polls as told sees its record.
local GONE_MS = math.max(SESSION_MS, IDLE_MS, LONG_IDLE_MS / 3, 300000)

-- Records `reason` for each {user, ticket} pair.
local function record_departures(pairs, reason)
  local fields = {}
  for _, pair in ipairs(pairs) do
    local user, ticket = pair[1], pair[2]
    if ticket and ticket ~= 0 then
      fields[#fields + 1] = ticket
      fields[#fields + 1] = reason .. ' ' .. user
    end
  end
  if #fields == 0 then return end
  local key = current_of_two(GONE_KEYS, 'gone-generation:', GONE_MS)
  redis.call('HSET', key, unpack(fields))
  redis.call('PEXPIRE', key, 2 * GONE_MS)
end

-- The recorded reason `user`'s `ticket` lost its place, or 'unknown'.
local function recorded_departure(user, ticket)
  local generation = math.floor(NOW / GONE_MS)
  local marks = redis.call('HMGET', META, 'gone-generation:0', 'gone-generation:1')
  for back = 0, 1 do
    local slot = (generation - back) % 2
    if tonumber(marks[slot + 1]) == generation - back then
      local record = redis.call('HGET', GONE_KEYS[slot + 1], ticket)
      if record then
        local reason, holder = string.match(record, '^(%S+) (.+)$')
        if holder == user then return reason end
        return 'unknown'
      end
    end
  end
  return 'unknown'
end

-- Ends `user`'s session now for `reason` ('left' or 'paid'), notes its length for the
-- expected length and records why it ended. Returns its ticket.
local function end_session(user, reason)
  local ticket, length = close_session(user)
  -- A paid session's place is filled at the next tick, half a tick later on average; a left
  -- one's at once (leave.lua promotes).
  if length and reason == 'paid' then length = length + TICK_MS / 2 end
  note_session_lengths({length})
  -- The queue's first session to end early ends the expectation that sessions run to their
  -- end at once: it can only lower an estimate.
  if not SESSION_MEAN_MS then fold_session_lengths() end
  record_departures({{user, ticket}}, reason)
  return ticket
end
