-- A capacity pool's ledger (pool.rs), one hash under the pool's own hash tag: 'capacity' (the
-- operator's), 'weights' (the operator's: one "queue weight" a line, '' or absent for none),
-- 'grant' (the number of the last grant, counting on from the ms the pool was made), and per
-- queue 'a:<queue>' = "places:grant" (the places the ledger counts for it and the number of
-- the grant that gave them) and 't:<queue>' (the ms of its last report).
-- POOL: that hash. ARGV: keep_ms (the hash's TTL, renewed here), stale_ms (a queue that has
-- not reported for that long is out of the pool), then six per queue: queue, allotment, last
-- grant applied, live sessions, waiters, own capacity (promote.lua's report).
-- The rule that keeps the pool within its capacity: a queue never holds more than the ledger
-- counts for it. A grant raises the ledger's count first, and the queue's allotment only when
-- the queue applies it (a grant with a higher number); the ledger lowers a queue's count only
-- to an allotment the queue reports having shrunk to after applying the ledger's last grant.
-- Free places (the capacity less what the queues hold) go to the queues with waiters, in
-- proportion to their waiters or, where the operator set weights, to the weights; each up to
-- its own capacity and its live sessions plus its waiters. A queue that holds more than that
-- is asked to shrink.
-- Returns {{queue, places, grant, shrink to ('' when none), the pool's BookingHealth signal
-- "level:sent ms" ('' when none, pool_signal.lua)}, ...}, one per report. A pool
-- without a capacity (never made, or deleted) grants nothing and asks every queue to shrink
-- to 0 (never below its live sessions).
local POOL = KEYS[1]
local keep_ms, stale_ms = ARGV[1], tonumber(ARGV[2])
local reports_from = 3
local clock = redis.call('TIME')
local NOW = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)

local order, reports = {}, {}
for i = reports_from, #ARGV, 6 do
  local queue = ARGV[i]
  if not reports[queue] then order[#order + 1] = queue end
  reports[queue] = {allot = tonumber(ARGV[i + 1]), applied = tonumber(ARGV[i + 2]),
    active = tonumber(ARGV[i + 3]), waiting = tonumber(ARGV[i + 4]), cap = tonumber(ARGV[i + 5])}
end

local all = redis.call('HGETALL', POOL)
local capacity, grant, weights_raw, signal
local ledger, seen = {}, {}
for i = 1, #all, 2 do
  local field, value = all[i], all[i + 1]
  if field == 'capacity' then capacity = tonumber(value)
  elseif field == 'grant' then grant = tonumber(value)
  elseif field == 'weights' then weights_raw = value
  elseif field == 'signal' then signal = value
  else
    local kind, queue = string.match(field, '^(%a):(.+)$')
    if kind == 'a' then
      local places, number = string.match(value, '^(%d+):(%d+)$')
      ledger[queue] = {tonumber(places), tonumber(number)}
    elseif kind == 't' then
      seen[queue] = tonumber(value)
    end
  end
end
local answers = {}
if not capacity then
  for _, queue in ipairs(order) do answers[#answers + 1] = {queue, '', '', 0, ''} end
  return answers
end
redis.call('PEXPIRE', POOL, keep_ms)
grant = grant or NOW
local weights = {}
local weighted = false
for queue, weight in string.gmatch(weights_raw or '', '([^%s]+) (%d+)') do
  weights[queue] = tonumber(weight)
  weighted = true
end

local writes, gone = {}, {}
-- A report after the ledger's last grant to the queue: a smaller allotment is a confirmed
-- shrink, and the ledger counts no more than it.
for _, queue in ipairs(order) do
  local report, entry = reports[queue], ledger[queue] or {0, 0}
  if report.applied == entry[2] and report.allot < entry[1] then
    entry[1] = report.allot
  end
  ledger[queue] = entry
  writes[#writes + 1] = 't:' .. queue
  writes[#writes + 1] = NOW
end
-- A queue unheard of for stale_ms left the pool (or was retired): its count goes.
for queue, entry in pairs(ledger) do
  if not reports[queue] and (not seen[queue] or NOW - seen[queue] > stale_ms) then
    ledger[queue] = nil
    gone[#gone + 1] = 'a:' .. queue
    gone[#gone + 1] = 't:' .. queue
  end
end

-- What the queues hold: the ledger's count, or the live sessions where more (a queue that
-- joined with sessions live).
local function holds(queue)
  local report = reports[queue]
  return math.max(ledger[queue][1], report and report.active or 0)
end
local used = 0
for queue in pairs(ledger) do used = used + holds(queue) end

-- Each reported queue's share: its live sessions, plus its part of the free places.
local target, room = {}, {}
local free = capacity
for queue in pairs(ledger) do
  local report = reports[queue]
  free = free - (report and report.active or ledger[queue][1])
end
for _, queue in ipairs(order) do
  local report = reports[queue]
  target[queue] = report.active
  room[queue] = math.max(0, math.min(report.cap, report.active + report.waiting) - report.active)
end
local function weight(queue)
  if weighted then return weights[queue] or 1 end
  return reports[queue].waiting
end
while free > 0 do
  local total = 0
  for _, queue in ipairs(order) do
    if room[queue] > 0 then total = total + weight(queue) end
  end
  if total == 0 then break end
  local given = 0
  for _, queue in ipairs(order) do
    if room[queue] > 0 then
      local give = math.min(room[queue], math.floor(free * weight(queue) / total))
      target[queue], room[queue], given = target[queue] + give, room[queue] - give, given + give
    end
  end
  if given == 0 then
    -- What is left is less than one place a queue: one each, in turn.
    for _, queue in ipairs(order) do
      if room[queue] > 0 and given < free then
        target[queue], room[queue], given = target[queue] + 1, room[queue] - 1, given + 1
      end
    end
  end
  free = free - given
end

for _, queue in ipairs(order) do
  local entry = ledger[queue]
  local shrink = ''
  if entry[1] > target[queue] then
    shrink = target[queue]
  elseif entry[1] < target[queue] then
    local before = holds(queue)
    local give = math.min(target[queue] - entry[1], capacity - used)
    if give > 0 then
      grant = grant + 1
      entry[1], entry[2] = entry[1] + give, grant
      used = used - before + holds(queue)
    end
  end
  writes[#writes + 1] = 'a:' .. queue
  writes[#writes + 1] = string.format('%d:%d', entry[1], entry[2])
  answers[#answers + 1] = {queue, entry[1], string.format('%d', entry[2]), shrink, signal or ''}
end
writes[#writes + 1] = 'grant'
writes[#writes + 1] = string.format('%d', grant)
redis.call('HSET', POOL, unpack(writes))
if #gone > 0 then redis.call('HDEL', POOL, unpack(gone)) end
return answers
