-- Join: the buyer takes a place at the end of its stripe's line, once (buyer.rs JOIN names the
-- keys and arguments). A buyer with a live session is answered that; one already in line keeps
-- its place and is marked present. A new place is scored `now`, or the stripe's seal when
-- that is later, so no place lands in a segment the tick has already admitted from; its
-- segment joins the stripe's list of segments.
-- Returns {'active', until} | {'waiting', score} | {'joined', score}.
local LINE, ACTIVE, SEGMENTS, PUBLISHED, SEEN = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local user, now, segment_ms = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local presence_ms, keep_ms = ARGV[4], ARGV[5]
local until_ms = tonumber(redis.call('ZSCORE', ACTIVE, user))
if until_ms and until_ms > now then return {'active', string.format('%d', until_ms)} end
local held = redis.call('ZSCORE', LINE, user)
redis.call('SET', SEEN, 1, 'PX', presence_ms)
if held then return {'waiting', held} end
local score = math.max(now, tonumber(redis.call('HGET', PUBLISHED, 'sealed') or '0'))
redis.call('ZADD', LINE, score, user)
redis.call('SADD', SEGMENTS, math.floor(score / segment_ms))
redis.call('PEXPIRE', LINE, keep_ms)
redis.call('PEXPIRE', SEGMENTS, keep_ms)
return {'joined', string.format('%d', score)}
