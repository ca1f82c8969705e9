-- The alarms' state for a queue on the striped line (striped_tick.rs): ARGV[ARG] what the
-- promoter last read of the alarms the queue names ('0' one is in ALARM, '1' none is),
-- ARGV[ARG + 1] the names that holds for (one a line), so a word about a list the operator has
-- since changed is not taken. When the state changed, it is written as promote.lua writes it
-- (set_health: a fall to 0 at once, a rise climbing from where the level stood).
-- Returns 1 when it wrote the change, else 0.
local alarm, alarm_names = ARGV[ARG], ARGV[ARG + 1]
local alarms = redis.call('HGET', SETTINGS, 'health-alarms') or ''
if alarms ~= '' and alarms == alarm_names and (alarm == '0') ~= (stored[21] == '0') then
  set_health(nil, alarm == '0' and '0' or '')
  return 1
end
return 0
