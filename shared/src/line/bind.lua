-- An access code's binding (codes.rs BIND names the keys and arguments), on the code's stripe:
-- a code no buyer holds ('') is bound to `user`; one bound to `user` stays so. With `op`
-- 'unbind', a code bound to `user` is let go again: the join it was bound for took no new
-- place.
-- Returns 'new' | 'again' | 'unknown' (no such code) | 'taken' (another buyer's); for
-- 'unbind', 'unbound' | 'kept'.
local CODES = KEYS[1]
local hash, user, op = ARGV[1], ARGV[2], ARGV[3]
local bound = redis.call('HGET', CODES, hash)
if op == 'unbind' then
  if bound ~= user then return 'kept' end
  redis.call('HSET', CODES, hash, '')
  return 'unbound'
end
if not bound then return 'unknown' end
if bound == '' then
  redis.call('HSET', CODES, hash, user)
  return 'new'
end
if bound == user then return 'again' end
return 'taken'
