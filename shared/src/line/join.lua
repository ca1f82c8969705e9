-- Join: the buyer takes a place at the end of its stripe's line, once (buyer.rs JOIN names the
-- keys and arguments). A buyer with a live session is answered that; one already in line keeps
-- its place. A new place is scored `now`, or the stripe's seal when that is later, so no place
-- lands in a segment the tick has already admitted from; its segment joins the stripe's list of
-- segments. Either way the buyer's mark says it waits ('w'), present for `presence_ms`. The
-- tick, which runs while the line has places, keeps the line's keys alive.
-- Returns {'active', until} | {'waiting', score} | {'joined', score}.
local LINE, ACTIVE, SEGMENTS, SEALED, SEEN = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local user, now, segment_ms = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local presence_ms = ARGV[4]
local until_ms = tonumber(redis.call('ZSCORE', ACTIVE, user))
if until_ms and until_ms > now then return {'active', string.format('%d', until_ms)} end
local held = redis.call('ZSCORE', LINE, user)
redis.call('SET', SEEN, 'w', 'PX', presence_ms)
if held then return {'waiting', held} end
local score = math.max(now, tonumber(redis.call('GET', SEALED) or '0'))
redis.call('ZADD', LINE, score, user)
redis.call('SADD', SEGMENTS, math.floor(score / segment_ms))
return {'joined', string.format('%d', score)}
