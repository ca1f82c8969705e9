-- Clears a stripe's halt for one reason (halt.rs CLEAR names the key and argument): a halt for
-- another reason stays.
-- Returns 1 when it cleared the halt, else 0.
local HALT = KEYS[1]
local why = ARGV[1]
if redis.call('GET', HALT) == why then return redis.call('DEL', HALT) end
return 0
