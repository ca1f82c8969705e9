-- Promotion tick, one slice of it. ARGV[ARG]: admissions this tick may still make ('' on
-- the tick's first call: the queue's admit per tick, paced by the booking system's health,
-- paced_admissions). ARGV[ARG + 1]: what the promoter last read of the alarms the queue
-- names (healthAlarms): '0' when one is in ALARM, '1' when none is, '' when it does not know
-- (alarm_watch.rs AlarmWatch), and ARGV[ARG + 2] the names it read them for (one a line: a
-- word about other alarms than the queue names now is not taken). ARGV[ARG + 3] and
-- ARGV[ARG + 4]: the pool ledger's latest word for
-- a queue in a pool (pool.rs PoolWatch), its grant "places:number" and the places it should
-- shrink to, each '' when none; ARGV[ARG + 5] the pool's BookingHealth signal "level:sent ms"
-- ('' when none), taken as the queue's own unless it holds a later one; ARGV[ARG + 6] the pool
-- whose ledger said them: a word of another pool than the queue is in now (it moved since) is
-- not taken. Removes expired sessions, admits at
-- most SLICE, then updates the admission rate, an exponentially weighted moving average
-- of admissions per minute (time constant one minute) measured only while people wait and
-- the queue is neither paused nor sold out.
-- Returns {admitted, dropped, expired, waiting, active, rate, remaining, more, opened, waits,
-- closed, pace, alarms, pool} with the lists as promote() and purge_expired() give them; more is 1 when another
-- call this tick could admit more; opened is the draw {commitment, seed, members} on the first
-- tick after it was recorded ({'', '', ''} otherwise);
-- waits holds the ms each admitted buyer waited, by the ticket clock (a member placed by the
-- draw: since the opening); closed is 1 on the first tick after closesAt passed; pace is the
-- pace in force and whether it changed (below); alarms is the setting
-- healthAlarms as stored (the names, one per line; '' when none), for the promoter to read
-- them for the next tick; pool is the queue's report to its pool's ledger, {pool, allotment,
-- last grant applied, live sessions, waiters, the queue's own capacity}, {} outside a pool.
local remaining, alarm, alarm_names = tonumber(ARGV[ARG]), ARGV[ARG + 1], ARGV[ARG + 2]
local grant, shrink, pool_signal = ARGV[ARG + 3], tonumber(ARGV[ARG + 4]), ARGV[ARG + 5]
local word_pool = ARGV[ARG + 6]
-- A queue retired since the promoter listed it: nothing to do, and nothing written.
if redis.call('EXISTS', META) == 0 and redis.call('EXISTS', WAITING) == 0
    and redis.call('EXISTS', ACTIVE) == 0 then
  return {{}, {}, {}, 0, 0, '', 0, 0, {'', '', ''}, {}, 0, {}, '', {}}
end
keep_meta()
redis.call('PEXPIRE', CLOCK, KEEP_MS)
local alarms = redis.call('HGET', SETTINGS, 'health-alarms') or ''
-- The alarms' state changed since the last tick (only a queue that names alarms has one).
if alarm ~= '' and alarms ~= '' and alarm_names == alarms
    and (alarm == '0') ~= (stored[21] == '0') then
  set_health(nil, alarm == '0' and '0' or '')
end
-- The pool ledger's word (common.lua apply_pool_word).
apply_pool_word(grant, shrink, pool_signal, word_pool)
remaining = remaining or paced_admissions()
local expired = purge_expired(SLICE)
local waiting_before = waiting_count()
local admitted, dropped = promote(remaining)
remaining = remaining - #admitted

-- How long each admitted buyer waited: since the clock's last entry at or below their
-- ticket. Issue adds an entry whenever the last is a second old, so every ticket between two
-- entries was issued within a second after the first: the wait is at most a second over.
-- One lookup per admission (at most SLICE). Then the entries below the one the line's head
-- needs go.
local waits = {}
for _, entry in ipairs(admitted) do
  if DRAW_COMMIT and OPENS_AT and entry[2] <= DRAW_BASE then
    waits[#waits + 1] = math.max(0, NOW - OPENS_AT)
  else
    local mark = redis.call('ZRANGE', CLOCK, entry[2], '-inf', 'BYSCORE', 'REV', 'LIMIT', 0, 1)
    if mark[1] then waits[#waits + 1] = math.max(0, NOW - tonumber(mark[1])) end
  end
end
if #admitted + #dropped > 0 then
  local head = redis.call('ZRANGE', WAITING, 0, 0, 'WITHSCORES')[2]
  if LANE_ON then
    local lane_head = redis.call('ZRANGE', LANE, 0, 0, 'WITHSCORES')[2]
    if lane_head and (not head or tonumber(lane_head) < tonumber(head)) then head = lane_head end
  end
  if head then
    local floor = redis.call('ZRANGE', CLOCK, head, '-inf', 'BYSCORE', 'REV', 'LIMIT', 0, 1,
      'WITHSCORES')
    if floor[2] then redis.call('ZREMRANGEBYSCORE', CLOCK, '-inf', '(' .. floor[2]) end
  else
    -- Nobody waits: the next ticket needs only the last entry.
    redis.call('ZREMRANGEBYRANK', CLOCK, 0, -2)
  end
end

local total = tonumber(redis.call('HGET', META, 'admitted') or '0')
local mark_at = tonumber(redis.call('HGET', META, 'rate-mark-at'))
if waiting_before == 0 or PAUSED or SOLD_OUT or not mark_at then
  redis.call('HSET', META, 'rate-mark-at', NOW, 'rate-mark-admitted', total)
elseif NOW - mark_at >= 1000 then
  local elapsed = NOW - mark_at
  local since = total - tonumber(redis.call('HGET', META, 'rate-mark-admitted') or total)
  local sample = since * 60000 / elapsed
  local current = tonumber(redis.call('HGET', META, 'rate'))
  if current then
    current = current + (1 - math.exp(-elapsed / 60000)) * (sample - current)
  else
    current = sample
  end
  redis.call('HSET', META, 'rate', string.format('%.4f', current),
    'rate-mark-at', NOW, 'rate-mark-admitted', total)
end
local waiting, active = waiting_count(), live_active_count()
local more = 0
if not PAUSED and not SOLD_OUT and remaining > 0 and waiting > 0 and active < CAPACITY
    and (#admitted + #dropped >= SLICE or #expired >= SLICE) then
  more = 1
end
-- The opening is reported by the first tick that sees the draw recorded (by itself, by a
-- leave's promotion before it, or by configure removing the opening), once per draw:
-- configure clears the mark with a new seed. The report carries the draw as the summary
-- shows it, so the queue's event consumers keep it: {commitment, seed, members}.
local opened = {'', '', ''}
if DRAW_MEMBERS and redis.call('HSETNX', SETTINGS, 'draw-announced', 1) == 1 then
  opened = {DRAW_COMMIT or '', redis.call('HGET', SETTINGS, 'draw-seed') or '',
    string.format('%d', DRAW_MEMBERS)}
end
-- Likewise the end of arrivals at closesAt, once per closesAt (configure clears the mark).
local closed = 0
if CLOSES_AT and NOW >= CLOSES_AT
    and redis.call('HSETNX', SETTINGS, 'closes-announced', 1) == 1 then
  closed = 1
end
-- The pace in force, every tick (the promoter's metrics), and whether it changed without an
-- operator since last reported: the ramp's steps and its end or removal, and the health
-- level's changes in tenths (a fall, a recovery's climb, an alarm, a signal that lapsed),
-- each reported once (QueuePaceChanged); a pool's rebalancing is not reported. {changed (0|1), capacity in force, capacity set, what
-- limits the capacity, admissions a tick in force (h x admitPerTick), admitPerTick set, health
-- level, what holds it below 1 ('' at 1)}. The mark is a settings field, read in the
-- prelude's HMGET, so a queue at its normal pace with none reported pays nothing for this.
local announced = stored[19]
local mark = false
if RAMP_CAPACITY ~= nil or HEALTH < 1 then
  mark = string.format('%d:%d', OWN_CAPACITY, math.floor(HEALTH * 10))
end
local changed = 0
if mark ~= announced then
  changed = 1
  if mark then
    redis.call('HSET', SETTINGS, 'pace-announced', mark)
  else
    redis.call('HDEL', SETTINGS, 'pace-announced')
  end
end
local pace = {changed, CAPACITY, CONFIGURED_CAPACITY, limited_by(),
  string.format('%.4f', HEALTH * ADMIT_PER_TICK), ADMIT_PER_TICK,
  string.format('%.4f', HEALTH), HEALTH_WHY or ''}
local pool = {}
if POOL then
  pool = {POOL, POOL_ALLOT, string.format('%d', POOL_GRANT), active, waiting, OWN_CAPACITY}
end
return {admitted, dropped, expired, waiting, active, rate(), remaining, more, opened, waits,
  closed, pace, alarms, pool}
