-- Reap one chunk: ARGV[4] cursor (last ticket examined, exclusive), ARGV[5] chunk size.
-- Removes expired sessions and absent waiters. Returns {expired, dropped, next cursor},
-- where a next cursor of 0 means the whole line was examined.
local cursor, chunk = tonumber(ARGV[4]), tonumber(ARGV[5])
local expired = purge_expired(chunk)
local rows = redis.call('ZRANGEBYSCORE', WAITING, '(' .. cursor, '+inf', 'WITHSCORES', 'LIMIT', 0, chunk)
local absent = {}
for i = 1, #rows, 2 do
  if not is_present(tonumber(rows[i + 1])) then absent[#absent + 1] = rows[i] end
end
if #absent > 0 then redis.call('ZREM', WAITING, unpack(absent)) end
local next_cursor = 0
if #rows == 2 * chunk then next_cursor = tonumber(rows[#rows]) end
return {expired, #absent, next_cursor}
