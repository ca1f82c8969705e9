-- Reap one chunk: ARGV[ARG] cursor (last ticket examined, exclusive), ARGV[ARG + 1] chunk
-- size, ARGV[ARG + 2] ms without a new arrival after which an empty queue is idle.
-- Removes expired sessions and absent waiters; in a sold-out queue, every waiter, recorded
-- as 'given-back', so that its token still answers soldout (and, once reversed, says why
-- it lost its place).
-- Returns {expired, abandoned, next cursor, idle, given back}: the lists as {user, ticket}
-- pairs, a next cursor of 0 when the whole line was examined and no expired session is left
-- over, idle 1 when the queue is empty and has had no arrival for the idle period, and how
-- many waiters the sold-out queue gave back.
local cursor, chunk, idle_after = tonumber(ARGV[ARG]), tonumber(ARGV[ARG + 1]), tonumber(ARGV[ARG + 2])
local expired = purge_expired(chunk)
local rows = redis.call('ZRANGEBYSCORE', WAITING, string.format('(%d', cursor), '+inf', 'WITHSCORES', 'LIMIT', 0, chunk)
local abandoned, given_back, users = {}, {}, {}
for i = 1, #rows, 2 do
  local ticket = tonumber(rows[i + 1])
  if SOLD_OUT then
    given_back[#given_back + 1] = {rows[i], ticket}
    users[#users + 1] = rows[i]
  elseif not is_present(ticket) then
    abandoned[#abandoned + 1] = {rows[i], ticket}
    users[#users + 1] = rows[i]
  end
end
if #users > 0 then redis.call('ZREM', WAITING, unpack(users)) end
-- A sold-out queue's priority lane is given back too, a chunk per call.
if SOLD_OUT and LANE_ON then
  local laned = redis.call('ZRANGE', LANE, 0, chunk - 1, 'WITHSCORES')
  local lane_users = {}
  for i = 1, #laned, 2 do
    given_back[#given_back + 1] = {laned[i], tonumber(laned[i + 1])}
    lane_users[#lane_users + 1] = laned[i]
  end
  if #lane_users > 0 then redis.call('ZREM', LANE, unpack(lane_users)) end
end
record_departures(abandoned, 'dropped')
record_departures(given_back, 'given-back')
if #rows == 2 * chunk then return {expired, abandoned, tonumber(rows[#rows]), 0, #given_back} end
-- The line is done, but more expired sessions may wait: call again from the line's end.
if #expired == chunk then
  return {expired, abandoned, math.max(tonumber(rows[#rows]) or cursor, 1), 0, #given_back}
end
return {expired, abandoned, 0, is_idle(idle_after) and 1 or 0, #given_back}
