-- The tick's work on one stripe (tick.rs APPLY names the keys and arguments): admits the
-- waiters it chose (each only while still in line), removes the absent ones it passed over,
-- forgets segments left empty, and replaces the published state the stripe's polls read.
-- ARGV: now, session_ms, keep_ms, admit_count, drop_count, empty_count, then the admitted
-- users, the dropped users, the empty segments, then the published fields and values.
-- Returns {admitted users, dropped users}: those really moved.
local LINE, ACTIVE, SEGMENTS, PUBLISHED = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local now, session_ms, keep_ms = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
local admit_count, drop_count, empty_count = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local lists_from = 7
local admitted, dropped = {}, {}
for i = lists_from, lists_from + admit_count - 1 do
  if redis.call('ZREM', LINE, ARGV[i]) == 1 then
    redis.call('ZADD', ACTIVE, now + session_ms, ARGV[i])
    admitted[#admitted + 1] = ARGV[i]
  end
end
for i = lists_from + admit_count, lists_from + admit_count + drop_count - 1 do
  if redis.call('ZREM', LINE, ARGV[i]) == 1 then dropped[#dropped + 1] = ARGV[i] end
end
local fields_from = lists_from + admit_count + drop_count + empty_count
for i = lists_from + admit_count + drop_count, fields_from - 1 do
  redis.call('SREM', SEGMENTS, ARGV[i])
end
redis.call('DEL', PUBLISHED)
-- In chunks: unpack is bounded by Lua's stack.
for i = fields_from, #ARGV, 2000 do
  redis.call('HSET', PUBLISHED, unpack(ARGV, i, math.min(#ARGV, i + 1999)))
end
for _, key in ipairs({LINE, ACTIVE, SEGMENTS, PUBLISHED}) do
  redis.call('PEXPIRE', key, keep_ms)
end
return {admitted, dropped}
