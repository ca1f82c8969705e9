-- Settings: ARGV[ARG..] pairs of field name and value; an empty value returns the field to
-- the environment's default. Fields: capacity, session-ms, idle-ms, admit-per-tick, paused.
-- The caller has validated every value. Settings always hold 'created' (when the operator
-- first set them), so a queue an operator created stays created whatever is reset.
-- Returns the settings in force afterwards, as {capacity, session ms, admit per tick,
-- idle ms, paused}.
local old_idle = IDLE_MS
redis.call('HSETNX', SETTINGS, 'created', NOW)
keep_meta()
for i = ARG, #ARGV, 2 do
  local field, value = ARGV[i], ARGV[i + 1]
  if value == '' then
    redis.call('HDEL', SETTINGS, field)
  else
    redis.call('HSET', SETTINGS, field, value)
  end
end
local now_set = redis.call('HMGET', SETTINGS, 'capacity', 'session-ms', 'idle-ms',
  'admit-per-tick', 'paused')
local new_idle = tonumber(now_set[3] or ARGV[3])
if new_idle ~= old_idle then
  -- Heartbeat windows change length with the idle period: start presence afresh, giving
  -- every waiter one whole new idle period to poll.
  for slot = 0, SEEN_SLOTS - 1 do
    redis.call('UNLINK', KEYS[FIRST_SEEN + slot])
    redis.call('HDEL', META, 'seen-window:' .. slot)
  end
  redis.call('HSET', META, 'presence-grace-until', NOW + new_idle)
end
return {tonumber(now_set[1] or ARGV[1]), tonumber(now_set[2] or ARGV[2]),
  tonumber(now_set[4] or ARGV[4]), new_idle, now_set[5] == '1' and 1 or 0}
