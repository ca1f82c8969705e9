-- A paid session's end (release.rs RELEASE names the keys and arguments), on the buyer's
-- stripe. A payment ends a session at most once: its first delivery sets PAID, kept
-- `remember_s`, and a redelivery finds it and ends nothing. The first ends the buyer's live
-- session only if it is the one paid for: the place `paid_score` names, or without one, a
-- session that began before the payment by the server's clock (`paid_at`, never later than
-- `now`, plus 5 s for clock skew), so a late, repeated or future-dated event never ends a
-- later session of the same buyer. A payment more than `skew_ms` ahead of `now` ends nothing
-- and is not remembered. The mark then says the session was paid for ('p'); the next tick
-- fills the place.
-- Returns a tag and named fields (release.rs Released): {'ended', 'score', the place's}
-- | {'kept'}.
local ACTIVE, MARK, PAID = KEYS[1], KEYS[2], KEYS[3]
local user, now, paid_at, paid_score = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local skew_ms, session_ms, remember_s = tonumber(ARGV[5]), tonumber(ARGV[6]), ARGV[7]
local keep_ms = ARGV[8]
local CLOCK_SLACK_MS = 5000
if paid_at > now + skew_ms then return {'kept'} end
if not redis.call('SET', PAID, 1, 'NX', 'EX', remember_s) then return {'kept'} end
local until_ms = tonumber(redis.call('ZSCORE', ACTIVE, user))
if not until_ms or until_ms <= now then return {'kept'} end
local score = string.match(redis.call('GET', MARK) or '', '^a:%d+:(%-?%d+)$')
if paid_score then
  if tonumber(score) ~= paid_score then return {'kept'} end
elseif until_ms - session_ms > math.min(paid_at, now) + CLOCK_SLACK_MS then
  return {'kept'}
end
redis.call('ZREM', ACTIVE, user)
redis.call('SET', MARK, 'p', 'PX', keep_ms)
return {'ended', 'score', score or '0'}
