-- The least a leave script can run and keep leave's behaviour for a waiter, carrying leave's
-- keys and arguments: the server's clock (which departure record is current), the ticket
-- check, the removal and the departure record. It leaves out what leave also does: settings,
-- meta, the presence check (an absent waiter is told 'dropped'), the record's rotation and
-- TTL, the active set and the priority lane. It works on a scratch copy of the line (meta's
-- name + ':least-waiting') and a scratch record, so the queue is left as it was.
local ARG = 7
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local line = KEYS[4] .. ':least-waiting'
local user, ticket = ARGV[ARG], tonumber(ARGV[ARG + 1])
local held = redis.call('ZSCORE', line, user)
if not held or tonumber(held) ~= ticket then return {0, 'unknown', {}, {}} end
redis.call('ZREM', line, user)
redis.call('HSET', KEYS[4] .. ':least-gone', ARGV[ARG + 1], 'left ' .. user)
return {1, 'waiting', {}, {}}
