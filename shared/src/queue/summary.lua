-- Summary: {waiting (the priority lane included), active, rate, admitted through, settings in
-- force}.
return {waiting_count(), live_active_count(), rate(),
  ADMITTED_THROUGH,
  settings_reply({capacity = CAPACITY, session = SESSION_MS, admit = ADMIT_PER_TICK,
    idle = IDLE_MS, paused = PAUSED, mode = MODE, sold_out = SOLD_OUT, message = MESSAGE,
    max_waiting = MAX_WAITING})}
