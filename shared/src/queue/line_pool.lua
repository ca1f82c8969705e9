-- The pool ledger's word for a queue on the striped line (striped_tick.rs), taken as
-- promote.lua takes it (common.lua apply_pool_word): ARGV[ARG] its grant "places:number",
-- ARGV[ARG + 1] the places to shrink to, ARGV[ARG + 2] the pool's BookingHealth signal
-- "level:sent ms", each '' when none, and ARGV[ARG + 3] the pool the word is from.
-- Returns {the allotment, the last grant applied}, or {} for a queue in no pool.
local grant, shrink, pool_signal = ARGV[ARG], tonumber(ARGV[ARG + 1]), ARGV[ARG + 2]
local word_pool = ARGV[ARG + 3]
apply_pool_word(grant, shrink, pool_signal, word_pool)
if not POOL then return {} end
return {POOL_ALLOT, string.format('%d', POOL_GRANT)}
