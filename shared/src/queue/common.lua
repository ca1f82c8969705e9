-- Shared prelude of every queue script; the script's own body follows it.
-- KEYS, in this order (keys.rs QueueKeys::NAMES; a unit test holds the two lists equal):
-- waiting active active-tickets meta settings rate:0 rate:1 gone:0 gone:1 presence clock priority lane access access-codes
-- That is: the two rotating rate-limit counters, the two rotating departure records, the
-- waiters' presence deadlines, the ticket clock, the priority list, the priority lane, the
-- access list and the access codes.
-- ARGV: the environment's default capacity, session ms, idle ms and admit per tick, the ms
-- after which an empty queue without arrivals retires, the promotion tick's ms, then the
-- script's own arguments from ARGV[ARG]. A queue's own settings (PUT .../settings) override the defaults, so
-- every script sees the settings in force at that moment.
local WAITING, ACTIVE, TICKETS, META, SETTINGS = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local RATE_KEYS = {KEYS[6], KEYS[7]}
local GONE_KEYS = {KEYS[8], KEYS[9]}
-- Each waiter's presence deadline: a string of 32-bit deadlines, one per presence index
-- (below).
local PRESENCE = KEYS[10]
-- The ticket clock: sorted set, member the ms an issue ran, score the ticket it issued; one
-- entry per second of issuing at most, so the promoter can tell how long each buyer it
-- admits waited (promote.lua), to within a second.
local CLOCK = KEYS[11]
-- The priority lane: the operator's list of user ids (a set), and the lane itself, where
-- those on the list wait (sorted set, user → ticket), admitted before the main line.
local PRIORITY, LANE = KEYS[12], KEYS[13]
-- Presale access (access.rs): the access list (a set of user ids) and the access codes (a
-- hash: SHA-256 hex of a code → the user id it is bound to, '' until first used).
local ACCESS, ACCESS_CODES = KEYS[14], KEYS[15]
-- A script's own keys follow.
local OWN_KEYS = 16
-- ARGV, named once here and in `WaitingRoom::invocation` (a unit test holds them equal):
-- the environment's defaults, then the script's own arguments from ARGV[ARG], each bound
-- by name at the top of its script.
local DEFAULT_CAPACITY, DEFAULT_SESSION_MS, DEFAULT_IDLE_MS, DEFAULT_ADMIT_PER_TICK,
  RETIRE_AFTER_MS, TICK_MS_ARG = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local ARG = 7
-- The promotion tick: a place a session gave back is filled at the next one.
local TICK_MS = tonumber(TICK_MS_ARG)
-- Most admissions (and expired sessions removed) per script call, so that no call holds
-- Redis for more than about a millisecond; a promoter that may admit more calls again.
local SLICE = 32

-- Time is the server's clock (TIME), so Lambdas with skewed clocks still agree.
local clock = redis.call('TIME')
local NOW = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)

-- `user`'s session when it holds `ticket` (any ticket when nil): 'active', the ticket and
-- the session end; 'expired' and the ticket for a session past its end; nil when none.
local function find_active(user, ticket)
  local until_ms = redis.call('ZSCORE', ACTIVE, user)
  if not until_ms then return nil end
  -- The entry is "ticket:since" (active_entry).
  local raw = redis.call('HGET', TICKETS, user)
  local held = raw and tonumber(string.match(raw, '^%d+'))
  if ticket ~= nil and held ~= ticket then return nil end
  until_ms = tonumber(until_ms)
  if until_ms > NOW then return 'active', held, until_ms end
  return 'expired', held
end

-- An active buyer's ticket and the instant the session began, stored as "ticket:since".
local function active_entry(user)
  local raw = redis.call('HGET', TICKETS, user)
  if not raw then return nil end
  local ticket, since = string.match(raw, '^(%d+):(%d+)$')
  return tonumber(ticket), tonumber(since)
end

local stored = redis.call('HMGET', SETTINGS, 'capacity', 'session-ms', 'idle-ms',
  'admit-per-tick', 'paused', 'mode', 'sold-out', 'message', 'max-waiting', 'opens-at',
  'closes-at', 'prequeue-opens-at', 'draw-commit', 'draw-members', 'lane', 'access')
local CAPACITY = tonumber(stored[1] or DEFAULT_CAPACITY)
local SESSION_MS = tonumber(stored[2] or DEFAULT_SESSION_MS)
local IDLE_MS = tonumber(stored[3] or DEFAULT_IDLE_MS)
local ADMIT_PER_TICK = tonumber(stored[4] or DEFAULT_ADMIT_PER_TICK)
local PAUSED = stored[5] == '1'
-- Availability (availability.rs): the mode ('queue', 'passthrough' or 'closed'), whether the
-- queue is sold out, the operator's message ('' when none) and the most waiters (0: no
-- limit). Read in the same HMGET, so they cost no call of their own.
local MODE = stored[6] or 'queue'
local SOLD_OUT = stored[7] == '1'
local MESSAGE = stored[8] or ''
local MAX_WAITING = tonumber(stored[9]) or 0
-- Whether the queue has a priority lane: set while the operator's list or the lane holds
-- anyone. A queue without one spends no call on it.
local LANE_ON = stored[15] == '1'
-- Who may take a new place (the setting `access`): 'open', 'list' or 'code' (access.rs).
local ACCESS_MODE = stored[16] or 'open'
-- Whether find() found the buyer in the priority lane.
local IN_LANE = false
-- Whether the lane is admitted before the opening (the setting laneBeforeOpening). Read with
-- an HGET of its own by the calls that need it (before the opening, in a queue with a lane),
-- not in the settings HMGET every call pays for.
local LANE_EARLY
local function lane_before_opening()
  if LANE_EARLY == nil then
    LANE_EARLY = redis.call('HGET', SETTINGS, 'lane-before-opening') == '1'
  end
  return LANE_EARLY
end
-- A tenth of the idle period (mod.rs IDLE_WINDOWS): the bookkeeping that needs no finer
-- clock (the last call, when presence was last seen, meta's TTL) is written at most once
-- per half of it.
local WINDOW_MS = math.ceil(IDLE_MS / 10)

-- Schedule and draw (docs/draw.md), read in the same settings HMGET: the opening, the end of
-- arrivals and the opening of the pre-queue (ms, nil when not set), the SHA-256 the queue
-- committed to for its draw seed, and how many the draw placed (recorded at the opening).
-- A queue with a draw seed numbers its tickets so that one sorted set holds the draw before
-- everyone else: a pre-queue member's ticket is its draw value + 1 (1 to 2^52, the value
-- computed by the function from the seed and the user id), a later arrival's DRAW_BASE plus
-- the counter. Both stay exact in a double (below 2^53); never tostring() them (it keeps 14
-- digits): string.format('%d') or pass them to redis.call as numbers.
local OPENS_AT = tonumber(stored[10])
local CLOSES_AT = tonumber(stored[11])
local PREQUEUE_OPENS_AT = tonumber(stored[12])
local DRAW_COMMIT = stored[13] or nil
local DRAW_MEMBERS = tonumber(stored[14])
local DRAW_BASE = 4503599627370496
-- The low bits of a pre-queue member's ticket hold its presence index (issue.lua): 24 of the
-- 52, so the draw orders by the value's first 28 bits (schedule.rs DRAW_INDEX_BITS).
local DRAW_INDEX_SPAN = 16777216
local TICKET_BASE = DRAW_COMMIT and DRAW_BASE or 0
-- Before the opening: arrivals join the pre-queue (the priority lane's, the lane), nobody is
-- admitted (but the lane, with laneBeforeOpening).
local BEFORE_OPENING = OPENS_AT ~= nil and NOW < OPENS_AT
-- Long presence: a waiter is told to poll after a tenth of the low end of its wait, in whole
-- seconds, up to a third of LONG_IDLE_MS (eight idle periods); its poll keeps it present for
-- three times that, and for the idle period at least (presence_for). So a waiter far from
-- the front polls in proportion to its distance, looks again long before its turn unless the
-- line moves ten times faster than measured, and, if it walks away, is dropped after three
-- tenths of its wait: before its turn comes.
local LONG_IDLE_MS = IDLE_MS * 8

-- The meta fields the scripts read, in one HMGET: the last instant any script ran for the
-- queue (kept to within half a window), the end of the presence grace, the registration
-- mark, the expected session length, the highest ticket admitted, when the ticket clock last
-- had an entry, when a poll last kept a waiter present and when one kept it past the idle
-- period (both to within half a window), when meta's TTL was last renewed, what sessions
-- are known to last at least (SESSION_LOW, below) and the presence span. A script that writes one of
-- them updates its local copy too.
local meta = redis.call('HMGET', META, 'last-call', 'presence-grace-until', 'registered',
  'session-mean-ms', 'admitted-through', 'clock-at', 'seen-at', 'long-seen-at', 'kept-at',
  'session-low', 'presence-span')
local REGISTERED = meta[3] ~= false
local SESSION_MEAN_MS = tonumber(meta[4])
local ADMITTED_THROUGH = tonumber(meta[5]) or 0
local CLOCK_AT = tonumber(meta[6]) or 0
local SEEN_AT, LONG_SEEN_AT, KEPT_AT = tonumber(meta[7]), tonumber(meta[8]), tonumber(meta[9])
-- Until this instant every waiter counts as present. Set when the idle period or the
-- opening changes (configure.lua), when the presence span grows (fit_presence) and after an
-- outage, below.
local PRESENCE_GRACE_UNTIL = tonumber(meta[2]) or 0

-- An outage: no script ran for the queue for over a third of the idle period (Redis down,
-- unreachable or stalled), so waiters who poll as told may have had no heartbeat recorded.
-- If anyone was present when it began (a poll within the idle period before it), every
-- waiter counts as present for one idle period from now: a grace as long as the outage,
-- plus the idle period to poll again. Requiring a heartbeat live at the gap's start means a
-- quiet queue, where nothing calls for a while, gets at most one such grace per heartbeat,
-- not an endless chain of them. Only a queue that has had a heartbeat keeps the clock, so a
-- call for an unknown queue writes nothing.
local LAST_CALL = tonumber(meta[1])
if (not LAST_CALL or NOW - LAST_CALL >= WINDOW_MS / 2 or NOW < LAST_CALL)
    and (SEEN_AT or LONG_SEEN_AT) then
  local grace = PRESENCE_GRACE_UNTIL
  if LAST_CALL and NOW - LAST_CALL > IDLE_MS / 3 and SEEN_AT
      and SEEN_AT >= LAST_CALL - IDLE_MS - WINDOW_MS then
    grace = math.max(grace, NOW + IDLE_MS)
  end
  if grace ~= PRESENCE_GRACE_UNTIL then
    PRESENCE_GRACE_UNTIL = grace
    redis.call('HSET', META, 'last-call', NOW, 'presence-grace-until', grace)
  else
    redis.call('HSET', META, 'last-call', NOW)
  end
end

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
    if long then
      LONG_SEEN_AT = NOW
      redis.call('HSET', META, 'seen-at', NOW, 'long-seen-at', NOW)
    else
      redis.call('HSET', META, 'seen-at', NOW)
    end
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

local function live_active_count()
  return redis.call('ZCOUNT', ACTIVE, '(' .. NOW, '+inf')
end

-- How long sessions really last: buyers who pay or leave end theirs early. An ended
-- session's length waits in `meta` (pending-ms, pending-sessions) until a promotion admits
-- someone, and only then counts (fold_session_lengths): the expected length changes only
-- when every waiter's position does, so no estimate rises while a position holds.
-- A session's length here is how long it holds its place: one that runs out holds it until
-- the tick that takes it back, half a tick past its end on average (RUN_OUT_MS).
-- The first sessions to end are the short ones, so the live ones count too, each as the
-- length it is expected to reach: the ended sessions' mean, or, when longer, its age plus
-- three quarters of what its length leaves it (an even chance that it runs out, else ending
-- halfway) or plus that mean, whichever is shorter. Ended sessions
-- count with a weight that halves every 0.69 session lengths (e^(-t / length)): the
-- sessions a live one overlaps. Until a session has ended, sessions are expected to run out.
local RUN_OUT_MS = SESSION_MS + TICK_MS / 2
-- Live sessions sampled (by rank in the active set) for their ages at a fold.
local AGE_SAMPLES = 4
local function note_session_lengths(lengths)
  local sum, count = 0, 0
  for _, ms in ipairs(lengths) do
    sum, count = sum + ms, count + 1
  end
  if count == 0 then return end
  redis.call('HINCRBY', META, 'pending-ms', sum)
  redis.call('HINCRBY', META, 'pending-sessions', count)
end

-- The live sessions' ages, AGE_SAMPLES of them spread by rank, and how many are live. A
-- session's age is read from its end (the active set's score) less the length.
local function live_ages()
  local lapsed = redis.call('ZCOUNT', ACTIVE, '-inf', NOW)
  local live = redis.call('ZCARD', ACTIVE) - lapsed
  local ages = {}
  if live <= 0 then return ages, 0 end
  local samples = math.min(AGE_SAMPLES, live)
  for k = 0, samples - 1 do
    local index = lapsed + math.floor((k + 0.5) * live / samples)
    local entry = redis.call('ZRANGE', ACTIVE, index, index, 'WITHSCORES')
    local age = #entry == 2 and NOW - (tonumber(entry[2]) - SESSION_MS) or 0
    ages[#ages + 1] = math.max(0, math.min(SESSION_MS, age))
  end
  return ages, live
end

-- What the low end of a range takes a session to last (meta `session-low`,
-- "ms:permille:at"): once sessions have ended, their mean (which the short ones, ending
-- first, keep low); before that, the mean age of the live sessions at instant `at`, which
-- grows with time (permille 1000; 0 once sessions have ended).
local SESSION_LOW = {0, 0, NOW}
if meta[10] then
  local ms, share, at = string.match(meta[10], '^(%d+):(%d+):(%d+)$')
  if at then SESSION_LOW = {tonumber(ms), tonumber(share), tonumber(at)} end
end

-- Counts the sessions ended since the last fold, and refreshes the expected session length
-- (`session-mean-ms`) and `session-low` from them and the live sessions' ages. Called when a
-- promotion admitted someone, and when the queue's first session ends early.
local function fold_session_lengths()
  local stored = redis.call('HMGET', META, 'ended-ms', 'ended-count', 'ended-at', 'pending-ms',
    'pending-sessions')
  local ended_ms, ended = tonumber(stored[1]) or 0, tonumber(stored[2]) or 0
  local fade = math.exp(-math.max(0, NOW - (tonumber(stored[3]) or NOW)) / SESSION_MS)
  ended_ms = ended_ms * fade + (tonumber(stored[4]) or 0)
  ended = ended * fade + (tonumber(stored[5]) or 0)
  local ages, live = live_ages()
  if ended <= 0 and live == 0 then return end
  local ended_mean = ended > 0 and ended_ms / ended or nil
  local reach, age = 0, 0
  for _, a in ipairs(ages) do
    age = age + a / #ages
    local reaches = RUN_OUT_MS
    if ended_mean then
      reaches = math.max(ended_mean, a + math.min((RUN_OUT_MS - a) * 3 / 4, ended_mean))
    end
    reach = reach + reaches / #ages
  end
  SESSION_MEAN_MS = math.floor((ended_ms + live * reach) / (ended + live))
  local low, share = math.floor(age), 1000
  if ended_mean then low, share = math.floor(ended_mean), 0 end
  SESSION_LOW = {low, share, NOW}
  redis.call('HSET', META, 'session-mean-ms', SESSION_MEAN_MS,
    'ended-ms', string.format('%.17g', ended_ms), 'ended-count', string.format('%.17g', ended),
    'ended-at', NOW, 'session-low', string.format('%d:%d:%d', low, share, NOW))
  redis.call('HDEL', META, 'pending-ms', 'pending-sessions')
end

-- The expected length of a session and the low one, in ms, as the estimates take them.
-- Before any fold a session is expected to run out. The low length is `session-low`, at
-- most the expected one.
local function session_lengths()
  local mean = math.floor(math.min(SESSION_MEAN_MS or RUN_OUT_MS, SESSION_MS + TICK_MS))
  local known = SESSION_LOW[1] + math.max(0, NOW - SESSION_LOW[3]) * SESSION_LOW[2] / 1000
  return mean, math.floor(math.max(0, math.min(mean, known)))
end

-- Ends `user`'s session (live or lapsed) and returns its ticket and how long it held its
-- place in ms: until now, which for a lapsed session is the tick that takes the place back
-- (at most a tick past its end).
local function close_session(user)
  local until_ms = tonumber(redis.call('ZSCORE', ACTIVE, user))
  local ticket, since = active_entry(user)
  redis.call('ZREM', ACTIVE, user)
  redis.call('HDEL', TICKETS, user)
  if not until_ms or not since then return ticket, nil end
  return ticket, math.max(0, math.min(until_ms + TICK_MS, NOW) - since)
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

local function activate(user, ticket)
  redis.call('ZADD', ACTIVE, NOW + SESSION_MS, user)
  redis.call('HSET', TICKETS, user, string.format('%d:%d', ticket, NOW))
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
          tickets[#tickets + 1] = string.format('%d:%d', ticket, NOW)
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

local function rate()
  return redis.call('HGET', META, 'rate') or ''
end

local PAUSED_FLAG = PAUSED and 1 or 0

-- The settings in force as configure and summary reply (decoded by `QueueSettings`):
-- {capacity, session ms, admit per tick, idle ms, paused, {mode, sold out, message, max
-- waiting}, {opens at, closes at, pre-queue opens at}, lane before opening (0|1), access}, from `set`,
-- the fields as read (nil: the default; the schedule's ms as stored, '' when not set).
local function settings_reply(set)
  return {tonumber(set.capacity or DEFAULT_CAPACITY),
    tonumber(set.session or DEFAULT_SESSION_MS),
    tonumber(set.admit or DEFAULT_ADMIT_PER_TICK), tonumber(set.idle or DEFAULT_IDLE_MS),
    set.paused and 1 or 0,
    {set.mode or 'queue', set.sold_out and 1 or 0, set.message or '', tonumber(set.max_waiting) or 0},
    {set.opens_at or '', set.closes_at or '', set.prequeue_opens_at or ''},
    set.lane_before_opening and 1 or 0, set.access or 'open'}
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
-- `low`, the low length; `high`, sessions running out, each place taken back a tick late.
local function wait_estimate(position, from)
  if PAUSED or SOLD_OUT or CAPACITY < 1 then return '', '', '' end
  local mean, low_mean = session_lengths()
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
    for i, length in ipairs({mean, low_mean, SESSION_MS}) do
      frees_at[i] = math.max(start, math.min(until_ms, since + length))
    end
  end
  return string.format('%d', frees_at[1] - NOW + rounds * mean),
    string.format('%d', frees_at[2] - NOW + rounds * low_mean),
    string.format('%d', frees_at[3] - NOW + rounds * SESSION_MS + (rounds + 1) * TICK_MS)
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

-- How long a waiter's poll keeps it present, given the low end of its wait (ms as
-- wait_estimate gives it; '' while no estimate is honest): three times what it is told to
-- wait (a tenth of `low` in whole seconds, as TokenState::poll_after_seconds computes it), at
-- least the idle period and at most LONG_IDLE_MS. From the low end of the range: a wide range
-- never stretches a poll past the turn.
local function presence_for(low)
  if low == '' then return IDLE_MS end
  local told_ms = math.floor(tonumber(low) / 10000) * 1000
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

local function active_reply(created, ticket, until_ms)
  keep_meta()
  return token_reply(created, 'active', ticket, 0, until_ms, '', needs_registration())
end

-- Whether the queue is empty and has had no arrival for `idle_after` ms.
local function is_idle(idle_after)
  local last_issue = tonumber(redis.call('HGET', META, 'last-issue') or '0')
  return waiting_count() == 0 and live_active_count() == 0
    and NOW - last_issue >= idle_after
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
  local state, held, until_ms = find_active(user, ticket)
  if state then return state, held, until_ms end
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
