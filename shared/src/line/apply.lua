-- The tick's work on one stripe (tick.rs APPLY names the keys and arguments), for a tick whose
-- lease's fence is no lower than the highest the stripe has seen. Takes the places the tick
-- walked, in order, off the line: each whose buyer is present (its mark says it waits) is
-- admitted, for the session, and marked 'a:<until>:<score>' for two sessions, so its poll
-- after the session says it ended and a payment can name its place; each absent one is passed over and marked
-- 'd'. Forgets segments left empty. With `sealed` set, replaces the seal and the published
-- state the stripe's polls read: the tick's last call on the stripe carries them. On a halted
-- stripe (sold out, paused, health 0) a walk is refused, and only the seal is written: the
-- tick that chose it had not seen the halt. The tick's last call on the stripe also moves its
-- allowance of admissions on arrival (ALLOW, passthrough) by `allow`: a grant adds; a
-- taking-back takes at most what is left, since joins may have used some since the tick read
-- it. ALLOW then lives `allow_ms` more.
-- KEYS: the stripe's keys, then the mark of each walked user.
-- ARGV: now, session_ms, keep_ms, sealed (ms, or ''), published (text), fence, walk_count,
-- empty_count, allow, allow_ms, then the walked users and the empty segments.
-- Returns a tag and named fields (apply.rs ApplyReply): {'applied', 'admitted', users,
-- 'dropped', users}, those really moved; {'fenced', 'fence', the stripe's}; or
-- {'halted', 'why', why}.
local LINE, ACTIVE, SEGMENTS, SEALED, PUBLISHED, FENCE, HALT = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local ALLOW = KEYS[8]
local first_mark = 9
local now, session_ms, keep_ms = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
local sealed, published, fence = ARGV[4], ARGV[5], tonumber(ARGV[6])
local walk_count, empty_count = tonumber(ARGV[7]), tonumber(ARGV[8])
local allow, allow_ms = tonumber(ARGV[9]), ARGV[10]
local lists_from = 11
local seen = tonumber(redis.call('GET', FENCE) or '0')
if seen > fence then return {'fenced', 'fence', seen} end
redis.call('SET', FENCE, fence, 'PX', keep_ms)
local halted = redis.call('GET', HALT)
if halted and walk_count > 0 then
  if sealed ~= '' then redis.call('SET', SEALED, sealed, 'PX', keep_ms) end
  redis.call('PEXPIRE', HALT, keep_ms)
  return {'halted', 'why', halted}
end
local admitted, dropped = {}, {}
local until_ms = now + session_ms
for i = 0, walk_count - 1 do
  local user, mark = ARGV[lists_from + i], KEYS[first_mark + i]
  local score = redis.call('ZSCORE', LINE, user)
  if score then
    redis.call('ZREM', LINE, user)
    if redis.call('GET', mark) == 'w' then
      redis.call('ZADD', ACTIVE, until_ms, user)
      redis.call('SET', mark, 'a:' .. until_ms .. ':' .. score, 'PX', 2 * session_ms)
      admitted[#admitted + 1] = user
    else
      redis.call('SET', mark, 'd', 'PX', keep_ms)
      dropped[#dropped + 1] = user
    end
  end
end
for i = walk_count, walk_count + empty_count - 1 do
  redis.call('SREM', SEGMENTS, ARGV[lists_from + i])
end
if sealed ~= '' then
  if allow > 0 then
    redis.call('INCRBY', ALLOW, allow)
  elseif allow < 0 then
    local left = math.max(0, tonumber(redis.call('GET', ALLOW) or '0'))
    redis.call('DECRBY', ALLOW, math.min(left, -allow))
  end
  redis.call('PEXPIRE', ALLOW, allow_ms)
  redis.call('SET', SEALED, sealed, 'PX', keep_ms)
  redis.call('SET', PUBLISHED, published, 'PX', keep_ms)
  for _, key in ipairs({LINE, ACTIVE, SEGMENTS}) do
    redis.call('PEXPIRE', key, keep_ms)
  end
end
return {'applied', 'admitted', admitted, 'dropped', dropped}
