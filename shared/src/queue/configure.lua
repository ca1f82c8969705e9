-- Settings: ARGV[ARG] and ARGV[ARG + 1] a fresh draw seed and its SHA-256 (hex) the caller
-- made, ARGV[ARG + 2..] pairs of field name and value; an empty value returns the field to
-- the environment's default. Fields: capacity, session-ms, idle-ms,
-- admit-per-tick, paused, mode, sold-out, message, max-waiting, page, opens-at, closes-at,
-- prequeue-opens-at, lane-before-opening, access, challenge, challenge-cost-min,
-- challenge-cost-max, capacity-ramp ("from:step:every ms:to"; stored with the ms it was set
-- appended, its start where the queue has no opening, kept when only `to` changes),
-- health-alarms (alarm names, one a line), health-recovery-ms, health-ttl-ms, pool (a pool
-- id). A change of health-alarms forgets their state until the promoter's next tick reads the
-- new ones.
-- The caller has validated every value. Settings always hold 'created' (when the operator
-- first set them), so a queue an operator created stays created whatever is reset.
-- Returns {the settings in force afterwards (settings_reply), sold out before (0|1), mode
-- before, register (0|1)}, so the caller can report what changed; register is 1 when the
-- settings name health alarms or a pool and the queue is not marked registered: the caller
-- then puts it in the registry and marks it (registry.rs reregister), so the promoter watches
-- it before its first buyer. Or, with nothing written, {'invalid',
-- field, why} when the schedule's times disagree or mode passthrough would go with an opening
-- or a pool, or {'locked', why} when the change would alter a draw (rules below).
local seed, commitment = ARGV[ARG], ARGV[ARG + 1]
local pairs_from = ARG + 2
local old_idle = IDLE_MS
-- The longest a pre-queue member is told to wait before polling again: the function's
-- PREQUEUE_POLL_MAX_SECONDS (a unit test holds them equal).
local PREQUEUE_POLL_MAX_MS = 300000

-- The schedule (docs/draw.md). The times after the change, checked against each other here,
-- where the stored ones are known. A new schedule (none pending: none set, or its opening
-- passed) gets the caller's fresh seed, unless anyone waits in the line; one still
-- pending keeps its seed, so postponing keeps the draw. A pending opening with a pre-queue
-- member cannot be removed (postpone it instead). The pre-queue opens when the schedule is
-- set unless told otherwise.
local changed = {}
for i = pairs_from, #ARGV, 2 do changed[ARGV[i]] = ARGV[i + 1] end
local function after(field, current)
  local value = changed[field]
  if value == nil then return current end
  return tonumber(value)
end
local opens, closes = after('opens-at', OPENS_AT), after('closes-at', CLOSES_AT)
local prequeue = after('prequeue-opens-at', PREQUEUE_OPENS_AT)
local pending = OPENS_AT ~= nil and NOW < OPENS_AT
local drawn_waiting = DRAW_COMMIT and redis.call('ZCOUNT', WAITING, 1, DRAW_BASE) or 0
local new_seed = false
if changed['opens-at'] ~= nil then
  if not opens then
    if pending and drawn_waiting > 0 then
      return {'locked', 'the pre-queue has members: postpone the opening instead of removing it'}
    end
    -- An opening that has passed is recorded first, if no promotion did yet, so the draw
    -- stays checkable and is announced (summary.lua, promote.lua).
    if OPENS_AT and not pending then record_draw() end
    prequeue = nil
    changed['prequeue-opens-at'] = ''
  elseif not pending then
    -- A new draw needs an empty line: those waiting would otherwise stand around the draw
    -- by accident (ahead of it with numbers that read as draw values, or behind it though
    -- they came first).
    if redis.call('ZCARD', WAITING) > 0 then
      return {'locked', 'buyers wait in the line: set a new schedule once it is empty'}
    end
    new_seed = true
    if changed['prequeue-opens-at'] == nil then
      prequeue = NOW
      changed['prequeue-opens-at'] = string.format('%d', NOW)
    end
  end
end
if prequeue and not opens then
  return {'invalid', 'prequeueOpensAt', 'needs opensAt'}
end
if prequeue and prequeue >= opens then
  return {'invalid', 'prequeueOpensAt', 'must be before opensAt'}
end
if closes and opens and closes <= opens then
  return {'invalid', 'closesAt', 'must be after opensAt'}
end
-- Mode passthrough has no line, so later arrivals would pass the draw's members: a change
-- that would put it with an opening, or bring it in while a drawn member waits, is refused.
local mode = MODE
if changed['mode'] ~= nil then mode = changed['mode'] == '' and 'queue' or changed['mode'] end
if mode == 'passthrough' and (changed['mode'] ~= nil or changed['opens-at'] ~= nil) then
  if opens and changed['mode'] ~= nil then
    return {'invalid', 'mode', 'passthrough has no line to keep the draw in: remove opensAt first'}
  elseif opens then
    return {'invalid', 'opensAt', 'a queue in mode passthrough has no line for a draw: set mode queue first'}
  elseif MODE ~= 'passthrough' and drawn_waiting > 0 then
    return {'locked', "the draw's members still wait: passthrough would admit later arrivals ahead of them; let them be admitted first"}
  end
end
-- Mode passthrough admits at once, outside a pool's allotment, so it never goes with a pool:
-- a change that would put them together is refused, naming the field changed (the mode when
-- both are).
local pool = POOL
if changed['pool'] ~= nil then pool = changed['pool'] ~= '' and changed['pool'] or nil end
if mode == 'passthrough' and pool and (changed['mode'] ~= nil or changed['pool'] ~= nil) then
  if changed['mode'] ~= nil then
    return {'invalid', 'mode', 'passthrough admits outside the pool\'s allotment: remove pool first'}
  end
  return {'invalid', 'pool', 'a queue in mode passthrough admits outside any pool: set mode queue first'}
end
-- A changed closesAt is reported again when it passes (promote.lua).
if changed['closes-at'] ~= nil then redis.call('HDEL', SETTINGS, 'closes-announced') end
if new_seed then
  redis.call('HSET', SETTINGS, 'draw-seed', seed, 'draw-commit', commitment)
  redis.call('HDEL', SETTINGS, 'draw-members', 'draw-announced')
end
-- A ramp sent again, or with only `to` changed, keeps its start (the ms it was first set);
-- any other change of it starts it now.
if changed['capacity-ramp'] and changed['capacity-ramp'] ~= '' then
  local set_at = NOW
  local from, step, every, _, old_set_at = ramp_parts(stored[18])
  if from then
    local new_from, new_step, new_every =
      string.match(changed['capacity-ramp'], '^(%d+):(%d+):(%d+):%d+$')
    if tonumber(new_from) == from and tonumber(new_step) == step
        and tonumber(new_every) == every then
      set_at = old_set_at
    end
  end
  changed['capacity-ramp'] = changed['capacity-ramp'] .. ':' .. string.format('%d', set_at)
end
if changed['health-alarms'] ~= nil and stored[21] then set_health(nil, '') end
-- A queue that joins or leaves a pool starts without an allotment: the new pool's ledger
-- grants it places.
if changed['pool'] ~= nil and changed['pool'] ~= (POOL or '') then
  redis.call('HDEL', SETTINGS, 'pool-allot')
end
-- A new recovery time climbs on from where the level stands now.
if changed['health-recovery-ms'] ~= nil and stored[22] then set_health() end
-- The operator owns the hash from now on, also one a sold-out event or a first buyer made
-- with an expiry.
own_settings()
keep_meta()
write_fields(SETTINGS, changed)
local now_set = redis.call('HMGET', SETTINGS, 'capacity', 'session-ms', 'idle-ms',
  'admit-per-tick', 'paused', 'mode', 'sold-out', 'message', 'max-waiting', 'opens-at',
  'closes-at', 'prequeue-opens-at', 'lane-before-opening', 'access', 'capacity-ramp',
  'health-alarms', 'pool')
local new_idle = tonumber(now_set[3] or DEFAULT_IDLE_MS)
-- A buyer who polls when told keeps its place, whatever the operator changes afterwards.
-- Each was told, under the settings before this change, to poll again by `told_by` at the
-- latest: a waiter within a third of the idle period (a third of the long period when a long
-- heartbeat is live), a pre-queue member by a third of the idle period (its jitter) after the
-- opening, or after PREQUEUE_POLL_MAX_MS when the opening was further (it counts as present
-- until one idle period after the opening, is_present). A change of the idle period, or of
-- an opening whose pre-queue may not all have polled since, moves the presence grace to one
-- new idle period after `told_by`, never earlier than it was: it only ever moves later.
local new_opens = tonumber(now_set[10])
if new_idle ~= old_idle or (new_opens ~= OPENS_AT and OPENS_AT and NOW < OPENS_AT + IDLE_MS) then
  local told_by = NOW + IDLE_MS / 3
  if long_presence_live() then told_by = NOW + LONG_IDLE_MS / 3 end
  if OPENS_AT and NOW < OPENS_AT + IDLE_MS then
    told_by = math.max(told_by, math.min(OPENS_AT, NOW + PREQUEUE_POLL_MAX_MS) + IDLE_MS / 3)
  end
  PRESENCE_GRACE_UNTIL = math.max(PRESENCE_GRACE_UNTIL, math.ceil(told_by) + new_idle)
  redis.call('HSET', META, 'presence-grace-until', PRESENCE_GRACE_UNTIL)
end
local set = {capacity = now_set[1] or nil, session = now_set[2] or nil, admit = now_set[4] or nil,
  idle = new_idle, paused = now_set[5] == '1', mode = now_set[6] or nil,
  sold_out = now_set[7] == '1', message = now_set[8] or nil, max_waiting = now_set[9] or nil,
  opens_at = now_set[10] or nil, closes_at = now_set[11] or nil,
  prequeue_opens_at = now_set[12] or nil, lane_before_opening = now_set[13] == '1',
  access = now_set[14] or nil, ramp = now_set[15] or nil}
local register = (now_set[16] or now_set[17]) and not REGISTERED
return {settings_reply(set), SOLD_OUT and 1 or 0, MODE, register and 1 or 0}
