-- Claim: keys CAMPAIGN, CLAIMS, OUTBOX, the two rotating rate-limit hashes, then for a
-- campaign kept under its queue's tag that queue's active sorted set and active-tickets
-- hash. Arguments: user; ip, the source IP ('' when unknown); user_limit and ip_limit, the
-- most claim requests per minute per user and per IP (0: no limit); ticket, the ticket of
-- the buyer's queue token ('' when none was shown); door, what the buyer brought to the door
-- ('' nothing, 'bad' a solution that does not hold, 'ok' one that does).
-- O(1) whatever the campaign's size. Answers a tag and named fields, in the order checked:
--   {'unknown'}; {'elsewhere', 'queue', queue} (only a locator here: the campaign is under
--   that queue's tag, where the caller asks again);
--   {'held', 'number', n, 'at', claimed-at ms} (this buyer's claim, again);
--   {'not-open', 'opens-at', ms}; {'closed', 'closes-at', ms}; {'sold-out', 'quantity', n};
--   {'limited', 'retry-in', ms until the window ends} (counted only for a request that got
--   this far);
--   {'challenge-required'} or {'challenge-failed'} (a campaign with a challenge cost, and no
--   solution or a bad one);
--   {'inactive', 'queue', queue} (no ticket, or no active session in the campaign's queue
--   with it);
--   {'claimed', 'number', n, 'at', claimed-at ms}: the claim and its outbox entry, written
--   together.
local CLAIMS, OUTBOX, RATE_0, RATE_1 = KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local QUEUE_ACTIVE, QUEUE_TICKETS = KEYS[6], KEYS[7]
local RATE_KEYS = {RATE_0, RATE_1}
local user, ip, user_limit, ip_limit = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local ticket, door = ARGV[5], ARGV[6]

local c, absent = read_campaign()
if not c then return absent end

local held = redis.call('HGET', CLAIMS, user)
if held then
  local number, at = string.match(held, '^(%d+):(%d+)$')
  return {'held', 'number', number, 'at', at}
end

if c[3] and NOW < tonumber(c[3]) then return {'not-open', 'opens-at', c[3]} end
if c[4] and NOW >= tonumber(c[4]) then return {'closed', 'closes-at', c[4]} end
local quantity, claimed = tonumber(c[1]), tonumber(c[2] or '0')
if claimed >= quantity then return {'sold-out', 'quantity', c[1]} end

local retry_in = over_rate_limit(RATE_KEYS, NOW, user, ip, user_limit, ip_limit)
if retry_in then return {'limited', 'retry-in', retry_in} end

if c[8] and door ~= 'ok' then
  if door == '' then return {'challenge-required'} end
  return {'challenge-failed'}
end

if c[5] then
  if ticket == '' or not QUEUE_TICKETS then return {'inactive', 'queue', c[5]} end
  local until_ms = tonumber(redis.call('ZSCORE', QUEUE_ACTIVE, user))
  local entry = redis.call('HGET', QUEUE_TICKETS, user)
  if not until_ms or until_ms <= NOW or not entry
    or string.match(entry, '^(%d+):') ~= ticket then
    return {'inactive', 'queue', c[5]}
  end
end

local number = redis.call('HINCRBY', CAMPAIGN, 'claimed', 1)
redis.call('HSET', CLAIMS, user, number .. ':' .. NOW)
redis.call('ZADD', OUTBOX, number, user)
-- A key this call created gets the campaign's expiry; later ones keep it (a PUT moves it).
if number == 1 or redis.call('HLEN', CLAIMS) == 1 then redis.call('PEXPIREAT', CLAIMS, c[6]) end
if redis.call('ZCARD', OUTBOX) == 1 then redis.call('PEXPIREAT', OUTBOX, c[6]) end
return {'claimed', 'number', number, 'at', NOW}
