-- The tick's work on one stripe (tick.rs APPLY names the keys and arguments): admits the
-- waiters it chose, each only while still in line, and marks each admitted ('a:<until>', for
-- the session); removes the absent ones it passed over and marks them ('d'); forgets segments
-- left empty; and replaces the seal and the published state the stripe's polls read.
-- KEYS: the stripe's keys, then the mark of each admitted, then of each dropped user.
-- ARGV: now, session_ms, keep_ms, sealed (ms), published (text), admit_count, drop_count,
-- empty_count, then the admitted users, the dropped users and the empty segments.
-- Returns {admitted users, dropped users}: those really moved.
local LINE, ACTIVE, SEGMENTS, SEALED, PUBLISHED = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local first_mark = 6
local now, session_ms, keep_ms = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
local sealed, published = ARGV[4], ARGV[5]
local admit_count, drop_count, empty_count = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local lists_from = 9
local admitted, dropped = {}, {}
local until_ms = now + session_ms
for i = 0, admit_count - 1 do
  local user = ARGV[lists_from + i]
  if redis.call('ZREM', LINE, user) == 1 then
    redis.call('ZADD', ACTIVE, until_ms, user)
    redis.call('SET', KEYS[first_mark + i], 'a:' .. until_ms, 'PX', session_ms)
    admitted[#admitted + 1] = user
  end
end
for i = admit_count, admit_count + drop_count - 1 do
  local user = ARGV[lists_from + i]
  if redis.call('ZREM', LINE, user) == 1 then
    redis.call('SET', KEYS[first_mark + i], 'd', 'PX', keep_ms)
    dropped[#dropped + 1] = user
  end
end
for i = admit_count + drop_count, admit_count + drop_count + empty_count - 1 do
  redis.call('SREM', SEGMENTS, ARGV[lists_from + i])
end
redis.call('SET', SEALED, sealed, 'PX', keep_ms)
redis.call('SET', PUBLISHED, published, 'PX', keep_ms)
for _, key in ipairs({LINE, ACTIVE, SEGMENTS}) do
  redis.call('PEXPIRE', key, keep_ms)
end
return {admitted, dropped}
