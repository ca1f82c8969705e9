-- Summary: {waiting (the priority lane included), active, rate, admitted through, settings in
-- force, draw, pace}, the pace {the capacity in force, what limits it: 'capacity', 'ramp' or
-- 'pool',
-- admissions a tick in force, the health level in force, what holds it below 1 ('' at 1),
-- when the booking system's signal lapses unless renewed ('' without one)},
-- the draw {seed's SHA-256 (from when the pre-queue opens), seed (from the
-- opening), members (once recorded)}, each '' when not (yet) public. A draw stays in the
-- summary while its schedule is set, and after the schedule is removed while any member it
-- placed still waits in the line. laneBeforeOpening is read here with an HGET of its own: the
-- prelude's settings read leaves it out (common.lua).
local function health_until()
  local level, _, until_ms = health_signal(stored[20])
  if level and until_ms > NOW then return string.format('%d', until_ms) end
  return ''
end
local draw = {'', '', ''}
if DRAW_COMMIT and (OPENS_AT
    or (DRAW_MEMBERS and redis.call('ZCOUNT', WAITING, 1, DRAW_BASE) > 0)) then
  if not PREQUEUE_OPENS_AT or NOW >= PREQUEUE_OPENS_AT then draw[1] = DRAW_COMMIT end
  if not BEFORE_OPENING then
    draw[2] = redis.call('HGET', SETTINGS, 'draw-seed') or ''
    draw[3] = DRAW_MEMBERS and string.format('%d', DRAW_MEMBERS) or ''
  end
end
return {waiting_count(), live_active_count(), rate(),
  ADMITTED_THROUGH,
  settings_reply({capacity = CONFIGURED_CAPACITY, ramp = stored[18], session = SESSION_MS, admit = ADMIT_PER_TICK,
    idle = IDLE_MS, paused = PAUSED, mode = MODE, sold_out = SOLD_OUT, message = MESSAGE,
    max_waiting = MAX_WAITING, opens_at = stored[10] or nil, closes_at = stored[11] or nil,
    prequeue_opens_at = stored[12] or nil, access = ACCESS_MODE,
    lane_before_opening = redis.call('HGET', SETTINGS, 'lane-before-opening') == '1'}),
  draw, {CAPACITY, limited_by(),
    string.format('%.4f', HEALTH * ADMIT_PER_TICK), string.format('%.4f', HEALTH),
    HEALTH_WHY or '', health_until()}}
