-- Summary: {waiting, active, rate, admitted through, settings in force}.
return {redis.call('ZCARD', WAITING), live_active_count(), rate(),
  tonumber(redis.call('HGET', META, 'admitted-through') or '0'),
  {CAPACITY, SESSION_MS, ADMIT_PER_TICK, IDLE_MS, PAUSED_FLAG}}
