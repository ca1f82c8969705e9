-- The least a status script can run and keep status's behaviour, carrying status's keys and
-- arguments: the server's clock, the settings that can turn a waiter away (sold out, the
-- opening), the ticket check, the position, and the heartbeat's read and write of one chunk.
-- It leaves out what status also does: the wait estimate, meta, the presence check over the
-- live windows, the outage grace, the window's rotation and the priority lane. Its writes go
-- to a scratch key (meta's name + ':least-seen'), so the queue is left as it was.
local ARG = 6
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
local chunk = string.format('%d', math.floor(ticket / 32))
local mask = tonumber(redis.call('HGET', seen, chunk)) or 0
redis.call('HSET', seen, chunk, string.format('%d', bit.bor(mask, bit.lshift(1, ticket % 32))))
return {0, 'waiting', ticket, position, 0, '', 60000, 0, 0, '', 0}
