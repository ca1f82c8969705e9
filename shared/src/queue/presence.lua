-- Presence, after the prelude (common.lua): each waiter's deadline, its heartbeat and its check.

-- Presence. Each waiter has a deadline: the idle period after its last poll, or up to
-- LONG_IDLE_MS after one far from the front (presence_for). The deadlines live in one
-- string, PRESENCE, as unsigned 32-bit counts of PRESENCE_UNIT_MS from PRESENCE_EPOCH_MS (0: none; they last
-- until 2058), each at its ticket's presence index: the ticket modulo the presence span. The
-- span (meta `presence-span`) is a power of two from SPAN_MIN to SPAN_MAX and doubles while
-- the waiters fill half of it (fit_presence), so presence costs 4 bytes a place of the span,
-- whatever tickets were ever issued. A poll reads and writes one field; nothing scans. Two
-- tickets with one index keep the later deadline: one may count as present longer, never
-- shorter. A pre-queue member's ticket ends in its own index (issue.lua), so the draw does
-- not scatter them.
local PRESENCE_EPOCH_MS = 1704067200000
local PRESENCE_UNIT_MS = 250
local SPAN_MIN, SPAN_MAX = 128, DRAW_INDEX_SPAN
local PRESENCE_SPAN = tonumber(meta[11]) or SPAN_MIN

local function presence_field(ticket)
  return '#' .. string.format('%d', ticket % PRESENCE_SPAN)
end

-- What deadline_units() last read: the ticket and its deadline, so that the heartbeat after
-- a presence check need not read it again.
local read_ticket, read_units

-- The ticket's deadline, in PRESENCE_UNIT_MS from PRESENCE_EPOCH_MS (0: none).
local function deadline_units(ticket)
  if read_ticket ~= ticket then
    read_ticket = ticket
    read_units = redis.call('BITFIELD', PRESENCE, 'GET', 'u32', presence_field(ticket))[1]
  end
  return read_units
end

-- Whether a mark written at `at` (ms; nil: never) is half a window old, or from the future.
local function is_stale(at)
  return not at or NOW - at >= WINDOW_MS / 2 or NOW < at
end

-- Records that the holder of `ticket` was seen now: present for `present_ms` (the idle period
-- or more, presence_for). A later deadline already there stays. Notes when presence was
-- last seen, and when a poll kept a waiter present past the idle period (`long`), to within
-- half a window (the outage clock, meta's TTL and the grace of a settings change read
-- them); keep_meta then renews the deadlines' TTL with meta's.
local function heartbeat(ticket, present_ms)
  local long = present_ms > IDLE_MS
  local units = math.ceil((NOW + present_ms - PRESENCE_EPOCH_MS) / PRESENCE_UNIT_MS)
  local field = presence_field(ticket)
  if read_ticket == ticket then
    if read_units < units then redis.call('BITFIELD', PRESENCE, 'SET', 'u32', field, units) end
  else
    local old = redis.call('BITFIELD', PRESENCE, 'SET', 'u32', field, units)[1]
    if old > units then redis.call('BITFIELD', PRESENCE, 'SET', 'u32', field, old) end
  end
  read_ticket = nil
  if is_stale(SEEN_AT) or (long and is_stale(LONG_SEEN_AT)) then
    SEEN_AT, KEPT_AT = NOW, nil
    local noted = {'seen-at', NOW}
    if long then
      LONG_SEEN_AT = NOW
      noted[3], noted[4] = 'long-seen-at', NOW
    end
    redis.call('HSET', META, unpack(noted))
  end
end

-- Whether a poll told to come back late may still be outstanding: one kept a waiter
-- present past the idle period within the last LONG_IDLE_MS.
local function long_presence_live()
  return LONG_SEEN_AT ~= nil and LONG_SEEN_AT >= NOW - LONG_IDLE_MS
end

-- Whether the holder of `ticket` is within its deadline, or everyone counts as present.
local function is_present(ticket)
  if NOW < PRESENCE_GRACE_UNTIL then return true end
  -- Presence starts at the opening: the pre-queue has one idle period from it to poll.
  if OPENS_AT and NOW < OPENS_AT + IDLE_MS then return true end
  return PRESENCE_EPOCH_MS + deadline_units(ticket) * PRESENCE_UNIT_MS >= NOW
end

-- Doubles the presence span while `waiting` fills half of it. The indices change with the
-- span, so the deadlines start afresh under a grace of the longest poll interval anyone may
-- have been told plus the idle period, as a change of the idle period gives (configure.lua).
local function fit_presence(waiting)
  if waiting < PRESENCE_SPAN / 2 or PRESENCE_SPAN >= SPAN_MAX then return end
  local told = long_presence_live() and LONG_IDLE_MS / 3 or IDLE_MS / 3
  PRESENCE_SPAN = PRESENCE_SPAN * 2
  PRESENCE_GRACE_UNTIL = math.max(PRESENCE_GRACE_UNTIL, math.ceil(NOW + told) + IDLE_MS)
  redis.call('UNLINK', PRESENCE)
  redis.call('HSET', META, 'presence-span', PRESENCE_SPAN,
    'presence-grace-until', PRESENCE_GRACE_UNTIL)
  read_ticket, KEPT_AT = nil, nil
end
