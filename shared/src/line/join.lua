-- Join: the buyer takes a place at the end of its stripe's line, once (buyer.rs JOIN names the
-- keys and arguments). A buyer with a live session is answered that; one already in line keeps
-- its place. A place in the draw (`draw`, the lowest score of its value, when the caller's
-- clock is before the opening) is taken only while the stripe is not yet sealed past the
-- opening; its score adds the stripe's count of draw places (from 1), so equal values go by
-- arrival.
-- Any other new place is scored `now`, or the stripe's seal when that is later, so no place
-- lands in a segment the tick has already admitted from. A buyer on the stripe's priority list
-- (PRIORITY), in a queue with a lane (`lane` '1'), takes its place in the lane instead, even
-- before the opening: scored LANE_BASE plus that instant, in the lane's segments, below every
-- other place (mod.rs LANE_BASE, LANE_SEGMENTS). Its segment joins the stripe's list
-- of segments. Either way the buyer's mark says it waits ('w'), present for `presence_ms`, and
-- a draw member's until then after the opening. The tick, which runs while the line has
-- places, keeps the line's keys alive.
-- A buyer who holds nothing, when the queue takes no new places (`takes_new` not '1'), is
-- refused with nothing written; so is one not on the stripe's access list (ACCESS) when
-- `access` is 'list', and every one when it is 'none' (a presale by code, and no code of the
-- buyer's own).
-- The door (door.rs): where the queue asks for a solved challenge (`door` not ''), a new
-- arrival without one ('absent') is turned away 'required', one whose solution does not hold
-- ('bad') 'failed', and one whose serial's bit REDEEMED holds 'replayed', with nothing
-- written. The bit is set as the place is made; the bitmap lives until `redeem_until` (ms).
-- Passthrough (`passthrough` '1'): a new arrival is admitted at once, while its stripe is not
-- halted and its allowance (ALLOW, the tick's) has one left, which it takes; its session is
-- scored `admitted_score` in its mark. Otherwise it is refused 'full', with when to retry
-- (ms): once the stripe's first live session ends and a tick allows its room again, 1 to 10 s.
-- Returns a tag and named fields (buyer.rs JoinReply): {'active', 'until', ms} |
-- {'waiting', 'score', the place's} | {'joined', 'score', the place's} |
-- {'admitted', 'until', ms} | {'refused'} | {'denied'} | {'full', 'retry_ms', ms} |
-- {'door', 'why', 'required' | 'failed' | 'replayed'}.
local LINE, ACTIVE, SEGMENTS, SEALED, DRAWS, MARK = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local ACCESS, REDEEMED, HALT, ALLOW, PRIORITY = KEYS[7], KEYS[8], KEYS[9], KEYS[10], KEYS[11]
local user, now, segment_ms = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local presence_ms, draw, draw_segment = ARGV[4], tonumber(ARGV[5]), ARGV[6]
local opens_at, keep_ms, takes_new, access = tonumber(ARGV[7]), ARGV[8], ARGV[9], ARGV[10]
local door, redeem_until = ARGV[11], tonumber(ARGV[12])
local passthrough, session_ms, admitted_score = ARGV[13], tonumber(ARGV[14]), ARGV[15]
local lane = ARGV[16]
local LANE_BASE, LANE_SEGMENTS = -9007199254740992, -1125899906842624
local SERIALS_PER_BITMAP = 1048576
local function redeem()
  if door == '' then return end
  redis.call('SETBIT', REDEEMED, tonumber(door) % SERIALS_PER_BITMAP, 1)
  if redis.call('PTTL', REDEEMED) < redeem_until - now then
    redis.call('PEXPIREAT', REDEEMED, redeem_until)
  end
end
local until_ms = tonumber(redis.call('ZSCORE', ACTIVE, user))
if until_ms and until_ms > now then return {'active', 'until', string.format('%d', until_ms)} end
-- Whether the buyer holds a place is read first only where a refusal, the door, passthrough,
-- the lane or the draw depends on it. Otherwise (the common arrival: a queue that takes anyone
-- new, after the opening) `ZADD NX` finds a held place as it adds a new one, one call fewer.
local gated = takes_new ~= '1' or access == 'none' or access == 'list' or door ~= ''
  or passthrough == '1' or lane == '1' or draw ~= nil
local held = gated and redis.call('ZSCORE', LINE, user)
if not held and takes_new ~= '1' then return {'refused'} end
if not held and (access == 'none'
    or (access == 'list' and redis.call('SISMEMBER', ACCESS, user) == 0)) then
  return {'denied'}
end
if not held and door ~= '' then
  if door == 'absent' then return {'door', 'why', 'required'} end
  if door == 'bad' then return {'door', 'why', 'failed'} end
  if redis.call('GETBIT', REDEEMED, tonumber(door) % SERIALS_PER_BITMAP) == 1 then
    return {'door', 'why', 'replayed'}
  end
end
if not held and passthrough == '1' then
  if redis.call('EXISTS', HALT) == 1 or tonumber(redis.call('GET', ALLOW) or '0') <= 0 then
    local first = redis.call('ZRANGEBYSCORE', ACTIVE, '(' .. now, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
    local retry = 1000
    if #first == 2 then retry = math.max(1000, math.min(10000, tonumber(first[2]) - now + 1000)) end
    return {'full', 'retry_ms', string.format('%d', retry)}
  end
  redis.call('DECR', ALLOW)
  redeem()
  local admitted_until = now + session_ms
  redis.call('ZADD', ACTIVE, admitted_until, user)
  redis.call('SET', MARK, 'a:' .. admitted_until .. ':' .. admitted_score, 'PX', 2 * session_ms)
  return {'admitted', 'until', string.format('%d', admitted_until)}
end
local present_for = tonumber(presence_ms)
if draw and opens_at > now then present_for = present_for + opens_at - now end
redis.call('SET', MARK, 'w', 'PX', present_for)
if held then return {'waiting', 'score', held} end
local sealed = tonumber(redis.call('GET', SEALED) or '0')
local score, segment
if lane == '1' and redis.call('SISMEMBER', PRIORITY, user) == 1 then
  local at = math.max(now, sealed)
  score = LANE_BASE + at
  segment = LANE_SEGMENTS + math.floor(at / segment_ms)
elseif draw and sealed < opens_at then
  score = draw + redis.call('INCR', DRAWS) % 16777216
  redis.call('PEXPIRE', DRAWS, keep_ms)
  segment = draw_segment
else
  score = math.max(now, sealed)
  segment = math.floor(score / segment_ms)
end
if redis.call('ZADD', LINE, 'NX', string.format('%d', score), user) == 0 then
  return {'waiting', 'score', redis.call('ZSCORE', LINE, user)}
end
redis.call('SADD', SEGMENTS, string.format('%d', segment))
redeem()
return {'joined', 'score', string.format('%d', score)}
