-- Settings: ARGV[ARG..] pairs of field name and value; an empty value returns the field to
-- the environment's default. Fields: capacity, session-ms, idle-ms, admit-per-tick, paused,
-- mode, sold-out, message, max-waiting.
-- The caller has validated every value. Settings always hold 'created' (when the operator
-- first set them), so a queue an operator created stays created whatever is reset.
-- Returns {the settings in force afterwards (settings_reply), sold out before (0|1), mode
-- before}, so the caller can report what changed.
local old_idle = IDLE_MS
redis.call('HSETNX', SETTINGS, 'created', NOW)
-- The operator owns the hash from now on, also one a sold-out event made with an expiry.
redis.call('PERSIST', SETTINGS)
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
  'admit-per-tick', 'paused', 'mode', 'sold-out', 'message', 'max-waiting')
local new_idle = tonumber(now_set[3] or ARGV[3])
if new_idle ~= old_idle then
  -- Heartbeat windows change length with the idle period: start presence afresh, giving
  -- every waiter one whole new idle period to poll, and a waiter told a long interval under
  -- the old one that interval first.
  local grace = NOW + new_idle
  for slot = 0, LONG_SLOTS - 1 do
    if window_in_slot(slot, LONG) then grace = NOW + LONG_IDLE_MS / 3 + new_idle end
    redis.call('UNLINK', KEYS[FIRST_LONG + slot])
    redis.call('HDEL', META, 'long-window:' .. slot)
  end
  for slot = 0, SEEN_SLOTS - 1 do
    redis.call('UNLINK', KEYS[FIRST_SEEN + slot])
    redis.call('HDEL', META, 'seen-window:' .. slot)
  end
  redis.call('HSET', META, 'presence-grace-until', grace)
end
local set = {capacity = now_set[1] or nil, session = now_set[2] or nil, admit = now_set[4] or nil,
  idle = new_idle, paused = now_set[5] == '1', mode = now_set[6] or nil,
  sold_out = now_set[7] == '1', message = now_set[8] or nil, max_waiting = now_set[9] or nil}
return {settings_reply(set), SOLD_OUT and 1 or 0, MODE}
