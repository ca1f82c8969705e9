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

-- An operator's act (settings, the access list or codes, the priority list) creates the queue
-- where nobody has, and owns its settings from then on: they no longer end, as those a
-- sell-out, a health signal or (on the striped line, open_line.lua) a first buyer made do.
local function own_settings()
  redis.call('HSETNX', SETTINGS, 'created', NOW)
  redis.call('PERSIST', SETTINGS)
  redis.call('HDEL', SETTINGS, 'by-arrival')
end

-- `user`'s session when it holds `ticket` (any ticket when nil): 'active', the ticket and
-- the session end; 'expired' and the ticket for a session past its end; nil when none.
local function find_active(user, ticket)
  local until_ms = redis.call('ZSCORE', ACTIVE, user)
  if not until_ms then return nil end
  -- The entry begins with the ticket and the instant the session began (active_entry).
  local raw = redis.call('HGET', TICKETS, user)
  local held, since
  if raw then
    held, since = string.match(raw, '^(%d+):?(%d*)')
    held, since = tonumber(held), tonumber(since)
  end
  if ticket ~= nil and held ~= ticket then return nil end
  until_ms = tonumber(until_ms)
  -- An entry without its start (none is written so) counts as begun now.
  if until_ms > NOW then return 'active', held, until_ms, since or NOW end
  return 'expired', held
end

-- An active buyer's entry: "ticket:since:until", the ticket, the instant the session began
-- and the instant it ends (also its score in ACTIVE), and ":1" after them for a session its
-- buyer was told of as it began (admitted on joining). The gatekeeper's check reads the entry
-- alone (check.rs). Entries written before the end was added are "ticket:since".
local function active_entry_text(ticket, until_ms, told)
  return string.format(told and '%d:%d:%d:1' or '%d:%d:%d', ticket, NOW, until_ms)
end

-- An active buyer's ticket, the instant the session began, and whether its buyer was told
-- of it as it began.
local function active_entry(user)
  local raw = redis.call('HGET', TICKETS, user)
  if not raw then return nil end
  local ticket, since, told = string.match(raw, '^(%d+):(%d+):?%d*:?(%d*)')
  return tonumber(ticket), tonumber(since), told == '1'
end

local stored = redis.call('HMGET', SETTINGS, 'capacity', 'session-ms', 'idle-ms',
  'admit-per-tick', 'paused', 'mode', 'sold-out', 'message', 'max-waiting', 'opens-at',
  'closes-at', 'prequeue-opens-at', 'draw-commit', 'draw-members', 'lane', 'access',
  'challenge', 'capacity-ramp', 'pace-announced', 'health-signal', 'health-alarm',
  'health-climb', 'health-recovery-ms', 'pool', 'pool-allot')
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
-- Whether a new arrival solves a challenge first (the setting `challenge`): 'off', 'on' or
-- 'adaptive' (door.rs).
local CHALLENGE = stored[17] or 'off'
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
-- The capacity ramp (the setting capacityRamp, settings.rs CapacityRamp), stored as
-- "from:step:every ms:to:ms it was set". From its start (the opening, or when it was set
-- where there is none) the ramp's capacity rises by `step` every `every` ms from `from` to
-- `to`; before the start it is `from`. The lower of it and `capacity` is CAPACITY, which every
-- admission path (issue, the tick, a leave's hand-over) admits within.
local CONFIGURED_CAPACITY = CAPACITY
local RAMP_CAPACITY
local function ramp_parts(raw)
  if not raw then return nil end
  local from, step, every, to, set_at = string.match(raw, '^(%d+):(%d+):(%d+):(%d+):(%d+)$')
  if not from then return nil end
  return tonumber(from), tonumber(step), tonumber(every), tonumber(to), tonumber(set_at)
end
do
  local from, step, every, to, set_at = ramp_parts(stored[18])
  if from then
    local start = OPENS_AT or set_at
    RAMP_CAPACITY = from
    if NOW >= start then
      RAMP_CAPACITY = math.min(to, from + step * math.floor((NOW - start) / every))
    end
    CAPACITY = math.min(CAPACITY, RAMP_CAPACITY)
  end
end
-- Capacity pools (pool.rs): a queue whose setting `pool` names a pool admits only within its
-- allotment, "places:grant" in pool-allot: the places the pool's ledger granted it (0 until the
-- first grant) and the number of the last grant it applied. The promoter's tick hands each
-- queue the ledger's latest word (promote.lua): a grant is applied when its number is higher,
-- and a request to shrink lowers the allotment, never below the sessions live. So the queue
-- never holds more than the ledger counts for it, and the pool's queues together never more
-- than the pool's capacity.
local POOL = stored[24] or nil
local POOL_ALLOT, POOL_GRANT = 0, 0
local OWN_CAPACITY = CAPACITY
if POOL then
  local places, grant = string.match(stored[25] or '', '^(%d+):(%d+)$')
  POOL_ALLOT, POOL_GRANT = tonumber(places) or 0, tonumber(grant) or 0
  CAPACITY = math.min(CAPACITY, POOL_ALLOT)
end
-- What limits the capacity in force: 'capacity', 'ramp' or 'pool'.
local function limited_by()
  if POOL and CAPACITY == POOL_ALLOT and POOL_ALLOT < OWN_CAPACITY then return 'pool' end
  if CAPACITY < CONFIGURED_CAPACITY then return 'ramp' end
  return 'capacity'
end
-- Health pacing (health.rs): how well the booking system copes, a level from 0 (down) to 1
-- (healthy), read in the same HMGET. Three fields of the settings hash hold it:
-- * health-signal, "level:sent ms:until ms": the last BookingHealth event (health.lua); it
--   counts until `until`, its time plus healthTtlSeconds, unless another renews it;
-- * health-alarm, '0' while an alarm the queue names (healthAlarms) is in ALARM, written by
--   the promoter's tick (promote.lua);
-- * health-climb, "level:ms": where the level in force stood when a signal or an alarm last
--   changed, and when. From there it climbs by 1 per healthRecoverySeconds (default
--   HEALTH_RECOVERY_DEFAULT_MS) up to what the signals say, so a recovery ramps; a fall takes
--   effect at once.
-- HEALTH is the level in force and HEALTH_WHY what holds it below 1: 'booking' (the event),
-- 'alarm' or 'recovery' (the climb); nil at 1. At HEALTH h a tick admits h x admitPerTick (on
-- average, paced_admissions) and nobody is admitted at once on arrival or by a leave's
-- hand-over unless h is 1; at 0 nobody is admitted on any path.
local HEALTH_RECOVERY_DEFAULT_MS = 60000
-- How long a BookingHealth level counts after it was sent, where the queue sets no
-- healthTtlSeconds.
local HEALTH_TTL_DEFAULT_MS = 120000
local HEALTH_RECOVERY_MS = tonumber(stored[23]) or HEALTH_RECOVERY_DEFAULT_MS
local function health_signal(raw)
  if not raw then return nil end
  local level, sent, until_ms = string.match(raw, '^([%d.]+):(%d+):(%d+)$')
  if not level then return nil end
  return tonumber(level), tonumber(sent), tonumber(until_ms)
end
-- What the signals say now, and which of them: {level, why}.
local function health_target(signal, alarm)
  local target, why = 1, nil
  local level, _, until_ms = health_signal(signal)
  if level and NOW < until_ms and level < 0.9999 then target, why = level, 'booking' end
  if alarm == '0' then target, why = 0, 'alarm' end
  return target, why
end
-- The level in force: the target, or the climb where it is lower. A signal that lapsed since
-- the climb's start is a rise at its `until`: the climb starts again there, from where the
-- level stood.
local function health_in_force(signal, alarm, climb)
  local target, why = health_target(signal, alarm)
  local from, since = string.match(climb or '', '^([%d.]+):(%d+)$')
  if not from or HEALTH_RECOVERY_MS <= 0 then return target, why end
  from, since = tonumber(from), tonumber(since)
  local level, _, until_ms = health_signal(signal)
  if level and until_ms <= NOW and until_ms > since then
    from = math.min(level, from + (until_ms - since) / HEALTH_RECOVERY_MS)
    since = until_ms
  end
  local climbed = from + (NOW - since) / HEALTH_RECOVERY_MS
  -- Within a ten-thousandth (what the replies show) of the target, it has arrived.
  if climbed < target - 0.0001 then return math.max(0, climbed), 'recovery' end
  return target, why
end
local HEALTH, HEALTH_WHY = health_in_force(stored[20], stored[21], stored[22])
-- Writes a new signal (nil: unchanged) or alarm state ('0' in ALARM, '' clear, nil:
-- unchanged), and the climb's new start: the level in force now, or the new target where
-- that is lower. So the level in force never jumps up: it climbs from where it stood.
local function set_health(signal, alarm)
  signal = signal or stored[20]
  if alarm == nil then alarm = stored[21] == '0' and '0' or '' end
  local target = health_target(signal, alarm)
  local climb = string.format('%.4f:%d', math.min(HEALTH, target), NOW)
  local fields = {'health-climb', climb}
  if signal then
    fields[#fields + 1] = 'health-signal'
    fields[#fields + 1] = signal
  end
  if alarm == '0' then
    fields[#fields + 1] = 'health-alarm'
    fields[#fields + 1] = alarm
  elseif stored[21] then
    redis.call('HDEL', SETTINGS, 'health-alarm')
  end
  redis.call('HSET', SETTINGS, unpack(fields))
  stored[20], stored[21], stored[22] = signal, alarm == '0' and '0' or false, climb
  HEALTH, HEALTH_WHY = health_in_force(signal, stored[21], climb)
end
-- Takes a BookingHealth level sent at `sent` (ms): 'stale' when the signal held was sent no
-- earlier, 'lapsed' when it would have lapsed already (healthTtlSeconds, else `default_ttl`
-- ms, after it was sent; one dated ahead of this clock counts from now), else 'applied' and
-- written (set_health).
local function take_signal(level, sent, default_ttl)
  local _, held_sent = health_signal(stored[20])
  if held_sent and sent <= held_sent then return 'stale' end
  local ttl = tonumber(redis.call('HGET', SETTINGS, 'health-ttl-ms') or default_ttl)
  local until_ms = math.min(sent, NOW) + ttl
  if until_ms <= NOW then return 'lapsed' end
  set_health(string.format('%s:%d:%d', level, sent, until_ms), nil)
  return 'applied'
end
-- The pool ledger's word (pool.rs PoolWatch), for a queue in a pool: a newer grant
-- "places:number" raises the allotment, a shrink lowers it to the places asked for, below the
-- sessions live if need be (the queue then admits nobody, on any path, until its sessions
-- have ended down to its allotment); the pool's BookingHealth signal "level:sent ms" is taken
-- as the queue's own unless it holds a later one. A word of another pool than the queue is
-- in now (it moved since) is not taken. Each '' when none. Whether it wrote the allotment.
local function apply_pool_word(grant, shrink, pool_signal, word_pool)
  if not POOL or word_pool ~= POOL then return false end
  local wrote = false
  local places, number = string.match(grant, '^(%d+):(%d+)$')
  local allot, applied = POOL_ALLOT, POOL_GRANT
  if places and tonumber(number) > applied then
    allot, applied = tonumber(places), tonumber(number)
  end
  if shrink and shrink < allot then allot = shrink end
  if allot ~= POOL_ALLOT or applied ~= POOL_GRANT then
    POOL_ALLOT, POOL_GRANT = allot, applied
    redis.call('HSET', SETTINGS, 'pool-allot', string.format('%d:%d', allot, applied))
    CAPACITY = math.min(OWN_CAPACITY, allot)
    wrote = true
  end
  if pool_signal ~= '' then
    local level, sent = string.match(pool_signal, '^([%d.]+):(%d+)$')
    if level then take_signal(level, tonumber(sent), HEALTH_TTL_DEFAULT_MS) end
  end
  return wrote
end
-- How many a tick at the level in force admits: admitPerTick at 1; below it, h x admitPerTick
-- per TICK_MS on average, counted on the clock, so a fraction carries to the next ticks
-- without being stored (0.3 x 5 admits 1, 2, 1, 2 ...).
local function paced_admissions()
  if HEALTH >= 1 then return ADMIT_PER_TICK end
  local per_ms = HEALTH * ADMIT_PER_TICK / TICK_MS
  return math.floor(per_ms * NOW) - math.floor(per_ms * (NOW - TICK_MS))
end
-- Long presence: a waiter is told to poll after a quarter of the low end of its wait, in
-- whole seconds, up to a third of LONG_IDLE_MS (eight idle periods); its poll keeps it present
-- for three times that, and for the idle period at least (presence_for). So a waiter far from
-- the front polls in proportion to its distance, looks again before its turn unless the line
-- moves four times faster than measured, and, if it walks away, is dropped after three
-- quarters of its wait: before its turn comes.
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
  'session-low', 'presence-span', 'session-high-ms', 'session-rest-ms')
local REGISTERED = meta[3] ~= false
local SESSION_MEAN_MS = tonumber(meta[4])
local SESSION_HIGH_MS, SESSION_REST_MS = tonumber(meta[12]), tonumber(meta[13])
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
