-- The booking system's health (a BookingHealth event, health.rs): ARGV[ARG] the level, 0 to
-- 1 as the event gave it (checked by the caller), ARGV[ARG + 1] the ms the event was sent
-- (its `time`; ordering), ARGV[ARG + 2] the environment's level TTL in ms (the queue's
-- healthTtlSeconds overrides it). A queue that does not exist (no settings, no meta) is
-- answered 'no-queue' and nothing is written. An event sent no later than the signal held is
-- 'stale', one whose level would already have lapsed 'lapsed'; neither writes. Otherwise the
-- signal is written (set_health: a fall takes effect at once, a rise climbs) and the answer
-- is {'applied', level in force before, level in force after}.
local level, sent, default_ttl = ARGV[ARG], tonumber(ARGV[ARG + 1]), ARGV[ARG + 2]
local unconfigured = redis.call('EXISTS', SETTINGS) == 0
if unconfigured and redis.call('EXISTS', META) == 0 then return {'no-queue'} end
local before = HEALTH
local taken = take_signal(level, sent, default_ttl)
if taken ~= 'applied' then return {taken} end
redis.call('HSETNX', SETTINGS, 'created', NOW)
-- As with a sell-out (sell_out.lua): a queue no operator configured has no owner for its
-- settings; the hash this makes ends a week on unless an operator configures the queue.
if unconfigured then redis.call('EXPIRE', SETTINGS, 7 * 86400) end
return {'applied', string.format('%.4f', before), string.format('%.4f', HEALTH)}
