-- A CloudWatch alarm's state (health.rs AlarmNotice): ALARM, one alarm's key; level '0' for
-- ALARM, '1' for OK, '' for INSUFFICIENT_DATA; at, the ms of the state change (ordering);
-- keep_ms, how long the state is kept. Stores "level:at" unless a state at least as recent is
-- held. Returns 1 when written, 0 when stale. The promoter reads these keys each tick for the
-- alarms its queues name (healthAlarms) and hands each queue its own (promote.lua).
local ALARM = KEYS[1]
local level, at, keep_ms = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local held = redis.call('GET', ALARM)
if held then
  local held_at = tonumber(string.match(held, ':(%d+)$'))
  if held_at and at <= held_at then return 0 end
end
redis.call('SET', ALARM, string.format('%s:%d', level, at), 'PX', keep_ms)
return 1
