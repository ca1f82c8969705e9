-- Access (access.rs): ARGV[ARG] the operation, ARGV[ARG + 1] the most entries the key may
-- hold, ARGV[ARG + 2..] at most ACCESS_CHUNK values (validated by the caller):
--   'add': user ids put on the access list;
--   'remove': user ids taken off it;
--   'mint': SHA-256 (hex) of fresh access codes, stored unbound ('').
-- 'add' and 'mint' create the queue, as a settings change does. One that would take the key
-- past the most writes nothing. Returns {done (0: over the most), entries now held}.
local op, most = ARGV[ARG], tonumber(ARGV[ARG + 1])
local values_from = ARG + 2
local values = {}
for i = values_from, #ARGV do values[#values + 1] = ARGV[i] end
if op == 'remove' then
  if #values > 0 then redis.call('SREM', ACCESS, unpack(values)) end
  return {1, redis.call('SCARD', ACCESS)}
end
if op == 'add' then
  local held = redis.call('SCARD', ACCESS)
  local new = #values
  if new > 0 then
    for _, member in ipairs(redis.call('SMISMEMBER', ACCESS, unpack(values))) do
      new = new - member
    end
  end
  if held + new > most then return {0, held} end
  own_settings()
  if #values > 0 then redis.call('SADD', ACCESS, unpack(values)) end
  return {1, redis.call('SCARD', ACCESS)}
end
-- 'mint'
local held = redis.call('HLEN', ACCESS_CODES)
if held + #values > most then return {0, held} end
own_settings()
local pairs_ = {}
for _, hash in ipairs(values) do
  pairs_[#pairs_ + 1] = hash
  pairs_[#pairs_ + 1] = ''
end
if #values > 0 then redis.call('HSET', ACCESS_CODES, unpack(pairs_)) end
return {1, redis.call('HLEN', ACCESS_CODES)}
