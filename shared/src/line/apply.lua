-- The tick's work on one stripe (tick.rs APPLY names the keys and arguments): admits the
-- waiters it chose, each only while still in line, and marks each admitted ('a:<until>', for
-- the session); removes the absent ones it passed over and marks them ('d'); forgets segments
-- left empty; and replaces the seal and the published state the stripe's polls read. All of
-- it only for a tick whose lease's fence is no lower than the highest the stripe has seen.
-- KEYS: the stripe's keys, then the mark of each admitted, then of each dropped user.
-- ARGV: now, session_ms, keep_ms, sealed (ms), published (text), fence, admit_count,
-- drop_count, empty_count, then the admitted users, the dropped users and the empty segments.
-- Returns {'applied', admitted users, dropped users}: those really moved; or {'fenced', the
-- stripe's fence}.
local LINE, ACTIVE, SEGMENTS, SEALED, PUBLISHED, FENCE = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local first_mark = 7
local now, session_ms, keep_ms = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
local sealed, published, fence = ARGV[4], ARGV[5], tonumber(ARGV[6])
local admit_count, drop_count, empty_count = tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9])
local lists_from = 10
local seen = tonumber(redis.call('GET', FENCE) or '0')
if seen > fence then return {'fenced', seen} end
redis.call('SET', FENCE, fence, 'PX', keep_ms)
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
return {'applied', admitted, dropped}
