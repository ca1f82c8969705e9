-- Sold out, as the booking system says (InventorySoldOut): ARGV[ARG] the message, ARGV[ARG + 1]
-- 1 when the event carries one (an event without one keeps the message set). A queue that
-- does not exist (no settings, no meta) is answered -1 and nothing is written, so invented
-- queue ids leave no keys. Otherwise marks the queue sold out in its settings (the
-- operator's hash, reversed only by an operator) and returns 1, or 0 when it already was.
-- From the next call on, promote() admits nobody, status answers 'soldout', new arrivals are
-- refused and the reaper gives the line back.
local message, has_message = ARGV[ARG], ARGV[ARG + 1]
local unconfigured = redis.call('EXISTS', SETTINGS) == 0
if unconfigured and redis.call('EXISTS', META) == 0 then return -1 end
redis.call('HSETNX', SETTINGS, 'created', NOW)
-- A queue no operator configured (its first buyer created it) has no owner for settings:
-- the hash this makes ends a week on, unless an operator configures the queue meanwhile
-- (configure.lua keeps it for good).
if unconfigured then redis.call('EXPIRE', SETTINGS, 7 * 86400) end
if has_message == '1' then redis.call('HSET', SETTINGS, 'message', message) end
if SOLD_OUT then return 0 end
redis.call('HSET', SETTINGS, 'sold-out', 1)
return 1
