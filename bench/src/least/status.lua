-- The least a status script can run and keep status's behaviour, carrying status's keys and
-- arguments: the server's clock, the settings that can turn a waiter away (sold out, the
-- opening), the ticket check, the position, and the presence deadline's read and write.
-- It leaves out what status also does: the wait estimate, meta, the outage grace and the
-- priority lane. Its writes go to a scratch key (meta's name + ':least-seen'), so the queue
-- is left as it was.
local ARG = 7
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local settings = redis.call('HMGET', KEYS[5], 'sold-out', 'opens-at')
local user, ticket = ARGV[ARG], tonumber(ARGV[ARG + 1])
local held = redis.call('ZSCORE', KEYS[1], user)
if not held or tonumber(held) ~= ticket or settings[1] == '1'
    or (tonumber(settings[2]) or 0) > now then
  return {0, 'unknown', 0, 0, 0, '', 0, 0, 0, '', 0}
end
local position = redis.call('ZRANK', KEYS[1], user) + 1
local seen = KEYS[4] .. ':least-seen'
local field = '#' .. string.format('%d', ticket % 256)
local units = math.floor((now + 60000 - 1704067200000) / 250)
local old = redis.call('BITFIELD', seen, 'SET', 'u32', field, units)[1]
if old ~= 0 and old * 250 + 1704067200000 < now then
  return {0, 'dropped', 0, 0, 0, '', 0, 0, 0, '', 0}
end
return {0, 'waiting', ticket, position, 0, '', 60000, 0, 0, '', 0}
