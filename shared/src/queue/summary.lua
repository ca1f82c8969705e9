-- Summary: {waiting, active, rate, admitted through, settings in force}.
return {redis.call('ZCARD', WAITING), live_active_count(), rate(),
  ADMITTED_THROUGH,
  {CAPACITY, SESSION_MS, ADMIT_PER_TICK, IDLE_MS, PAUSED_FLAG}}
