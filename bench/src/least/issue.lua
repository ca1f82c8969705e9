-- The least an issue script can run and keep issue's behaviour, carrying issue's keys and
-- arguments: the server's clock, the settings that can refuse an arrival (mode, sold out,
-- most waiting, the opening), the two rate-limit counters, the look for a live entry, the
-- ticket counter, the place in line and the first presence deadline. It leaves out what issue also
-- does: meta, the registration, the rate windows' rotation and TTLs, the line's length for
-- maxWaiting, the active set and the priority lane. Its writes go to scratch keys (meta's
-- name + ':bare-…'), so the queue is left as it was.
local ARG = 7
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local settings = redis.call('HMGET', KEYS[5], 'mode', 'sold-out', 'max-waiting', 'opens-at')
if settings[2] == '1' or settings[1] == 'closed' or (tonumber(settings[4]) or 0) > now then
  return {0, 'closed', 0, 0, 0, '', 0, 0, 0, '', 0}
end
local user, ip = ARGV[ARG], ARGV[ARG + 1]
local rate, line = KEYS[4] .. ':least-rate', KEYS[4] .. ':least-line'
local seen = KEYS[4] .. ':least-seen'
if redis.call('HINCRBY', rate, 'u:' .. user, 1) > tonumber(ARGV[ARG + 2])
    or redis.call('HINCRBY', rate, 'i:' .. ip, 1) > tonumber(ARGV[ARG + 3]) then
  return {0, 'limited', 0, 0, 0, '', 0, 0, 0, '', 0}
end
local held = redis.call('ZSCORE', line, user)
if held then return {0, 'waiting', tonumber(held), 0, 0, '', 60000, 0, 0, '', 0} end
local ticket = redis.call('HINCRBY', KEYS[4], 'least-seq', 1)
redis.call('ZADD', line, ticket, user)
redis.call('BITFIELD', seen, 'SET', 'u32', '#' .. string.format('%d', ticket % 256),
  math.floor((now + 60000 - 1704067200000) / 250))
return {1, 'waiting', ticket, ticket, 0, '', 60000, 0, 0, '', 0}
