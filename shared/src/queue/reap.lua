-- Reap one chunk: ARGV[4] cursor (last ticket examined, exclusive), ARGV[5] chunk size,
-- ARGV[6] ms without a new arrival after which an empty queue is idle.
-- Removes expired sessions and absent waiters. Returns {expired, dropped, next cursor, idle},
-- where a next cursor of 0 means the whole line was examined, and idle is 1 when the queue
-- is empty and has had no arrival for the idle period.
local cursor, chunk, idle_after = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local expired = purge_expired(chunk)
local rows = redis.call('ZRANGEBYSCORE', WAITING, '(' .. cursor, '+inf', 'WITHSCORES', 'LIMIT', 0, chunk)
local absent = {}
for i = 1, #rows, 2 do
  if not is_present(tonumber(rows[i + 1])) then absent[#absent + 1] = rows[i] end
end
if #absent > 0 then redis.call('ZREM', WAITING, unpack(absent)) end
if #rows == 2 * chunk then return {expired, #absent, tonumber(rows[#rows]), 0} end
local last_issue = tonumber(redis.call('HGET', META, 'last-issue') or '0')
local idle = 0
if redis.call('ZCARD', WAITING) == 0 and live_active_count() == 0 and NOW - last_issue >= idle_after then
  idle = 1
end
return {expired, #absent, 0, idle}
