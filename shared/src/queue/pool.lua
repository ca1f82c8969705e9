-- A capacity pool's ledger (pool.rs), one hash under the pool's own hash tag: 'capacity' (the
-- operator's), 'weights' (the operator's: one "queue weight" a line, '' or absent for none),
-- 'grant' (the number of the last grant, counting on from the ms the pool was made), 'signal'
-- (a BookingHealth level for the whole pool, pool_signal.lua), and per queue 'a:<queue>' =
-- "places:grant:seen" (the places the ledger counts for it, the number of the grant that gave
-- them, and about when it last reported: rewritten when it is a quarter of stale_ms old, so a
-- tick where nothing moves writes next to nothing).
-- POOL: that hash. ARGV: keep_ms (the hash's TTL, renewed here), stale_ms (a queue that has
-- not reported for that long is out of the pool), most (the most queues a pool serves: a
-- queue beyond them is granted nothing), then one report per queue, "queue allotment
-- applied active waiting capacity": its allotment, the last grant it applied, its live
-- sessions, its waiters and its own capacity (promote.lua).
-- The rule that keeps the pool within its capacity: a queue never holds more than the ledger
-- counts for it. A grant raises the ledger's count first, and the queue's allotment only when
-- the queue applies it (a grant with a higher number); the ledger lowers a queue's count only
-- to an allotment the queue reports having shrunk to after applying the ledger's last grant.
-- Free places (the capacity less what the queues hold) go to the queues with waiters, in
-- proportion to their waiters or, where the operator set weights, to the weights; each up to
-- its own capacity and its live sessions plus its waiters. A queue that holds more than that
-- is asked to shrink. Over the capacity, queues are asked to shrink below their live sessions
-- (below).
-- Returns {the pool's BookingHealth signal "level:sent ms" ('' when none), then one word per
-- report: "queue places grant shrink", shrink '-' when none}. A pool without a capacity (never
-- made, or deleted) grants nothing and asks every queue to shrink to 0 (never below its live
-- sessions): its words are "queue - - 0".
local POOL = KEYS[1]
local keep_ms, stale_ms, most = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local reports_from = 4
local clock = redis.call('TIME')
local NOW = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)

local reported, reports = {}, {}
for i = reports_from, #ARGV do
  local queue, allot, applied, active, waiting, cap =
    string.match(ARGV[i], '^(%S+) (%d+) (%d+) (%d+) (%d+) (%d+)$')
  if queue and not reports[queue] then
    reported[#reported + 1] = queue
    reports[queue] = {allot = tonumber(allot), applied = tonumber(applied),
      active = tonumber(active), waiting = tonumber(waiting), cap = tonumber(cap)}
  end
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
    local queue = string.match(field, '^a:(.+)$')
    if queue then
      local places, number, at = string.match(value, '^(%d+):(%d+):(%d+)$')
      if places then
        ledger[queue] = {tonumber(places), tonumber(number)}
        seen[queue] = tonumber(at)
      end
    end
  end
end
local answers = {signal or ''}
if not capacity then
  for _, queue in ipairs(reported) do answers[#answers + 1] = queue .. ' - - 0' end
  return answers
end
-- The queues served: those the ledger counts, and new ones while it counts fewer than `most`.
-- A queue beyond them is granted nothing and asked to shrink to 0.
local order, counted = {}, 0
for _ in pairs(ledger) do counted = counted + 1 end
for _, queue in ipairs(reported) do
  if ledger[queue] then
    order[#order + 1] = queue
  elseif counted < most then
    order[#order + 1] = queue
    counted = counted + 1
  else
    reports[queue] = nil
    answers[#answers + 1] = queue .. ' - - 0'
  end
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
-- Each reported queue's entry as read, to write only what changed.
local was = {}
-- A report after the ledger's last grant to the queue: a smaller allotment is a confirmed
-- shrink, and the ledger counts no more than it.
for _, queue in ipairs(order) do
  local report, entry = reports[queue], ledger[queue] or {0, 0}
  was[queue] = {entry[1], entry[2], seen[queue]}
  if report.applied == entry[2] and report.allot < entry[1] then
    entry[1] = report.allot
  end
  ledger[queue] = entry
end
-- A queue unheard of for stale_ms left the pool (or was retired): its count goes.
for queue in pairs(ledger) do
  if not reports[queue] and (not seen[queue] or NOW - seen[queue] > stale_ms) then
    ledger[queue] = nil
    gone[#gone + 1] = 'a:' .. queue
  end
end

-- What the queues hold: the ledger's count, or the live sessions or the allotment the queue
-- reports where more (a queue that joined with sessions live, or holds an allotment an earlier
-- pool of this id granted).
local function holds(queue)
  local report = reports[queue]
  if not report then return ledger[queue][1] end
  return math.max(ledger[queue][1], report.active, report.allot)
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
-- Over the capacity (it was lowered, or a queue joined with sessions live): the reported
-- queues' targets shrink, in proportion to their live sessions, until they fit in what the
-- other queues leave. A queue asked to shrink below its live sessions admits nobody until they
-- have ended down to it, so the pool's live sessions never rise while above its capacity.
if free < 0 then
  local live = 0
  for _, queue in ipairs(order) do live = live + target[queue] end
  local keep = math.max(0, live + free)
  if live > 0 then
    local left = keep
    for _, queue in ipairs(order) do
      local share = math.floor(target[queue] * keep / live)
      left = left - share
      room[queue] = target[queue] - share
      target[queue] = share
    end
    -- What rounding left: one each, in turn, to queues below their live sessions.
    for _, queue in ipairs(order) do
      if left > 0 and room[queue] > 0 then
        target[queue], room[queue], left = target[queue] + 1, room[queue] - 1, left - 1
      end
    end
  end
  for _, queue in ipairs(order) do room[queue] = 0 end
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
  local shrink = '-'
  if math.max(entry[1], reports[queue].allot) > target[queue] then
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
  local before = was[queue]
  if entry[1] ~= before[1] or entry[2] ~= before[2] or not before[3]
      or NOW - before[3] >= stale_ms / 4 then
    writes[#writes + 1] = 'a:' .. queue
    writes[#writes + 1] = string.format('%d:%d:%d', entry[1], entry[2], NOW)
  end
  answers[#answers + 1] = string.format('%s %d %d %s', queue, entry[1], entry[2], shrink)
end
writes[#writes + 1] = 'grant'
writes[#writes + 1] = string.format('%d', grant)
redis.call('HSET', POOL, unpack(writes))
if #gone > 0 then redis.call('HDEL', POOL, unpack(gone)) end
return answers
