-- Configure: keys CAMPAIGN, CLAIMS and OUTBOX. Arguments: mode, 'locator' or 'campaign';
-- queue, the queue id ('' for none); quantity; opens_at and closes_at, in ms ('' for none);
-- expires, the instant every key of the campaign expires (ms); write, 'write', or 'check' to
-- answer as a write would and write nothing; challenge_cost, the door's cost ('' for no
-- challenge).
-- 'locator' writes, under the campaign's own tag, which queue's tag holds a campaign; it is
-- refused when the campaign lives elsewhere already: {'without-queue'} for a campaign kept
-- under its own tag, {'home-differs', 'queue', queue} for a locator to another queue.
-- 'campaign' creates or updates the campaign itself; refused with {'home-differs', 'queue',
-- queue} where only a locator is, and with {'below-claimed', 'claimed', n} when the quantity
-- would fall below what was claimed. Answers {'done', 'created', 1 or 0} for a check or a
-- locator, and for a campaign written campaign_reply()'s fields under the tag 'written',
-- then 'created'.
local CLAIMS, OUTBOX = KEYS[2], KEYS[3]
local mode, queue, quantity = ARGV[1], ARGV[2], tonumber(ARGV[3])
local opens_at, closes_at, expires, write = ARGV[4], ARGV[5], ARGV[6], ARGV[7] == 'write'
local challenge_cost = ARGV[8]
local held = redis.call('HMGET', CAMPAIGN, 'locator', 'quantity', 'claimed')

if mode == 'locator' then
  if held[2] then return {'without-queue'} end
  if held[1] and held[1] ~= queue then return {'home-differs', 'queue', held[1]} end
  if write then
    redis.call('HSET', CAMPAIGN, 'locator', queue, 'expires-at', expires)
    redis.call('PEXPIREAT', CAMPAIGN, expires)
  end
  return {'done', 'created', held[1] and 0 or 1}
end

if held[1] then return {'home-differs', 'queue', held[1]} end
local claimed = tonumber(held[3] or '0')
if quantity < claimed then return {'below-claimed', 'claimed', claimed} end
if not write then return {'done', 'created', held[2] and 0 or 1} end
redis.call('HSET', CAMPAIGN, 'quantity', quantity, 'claimed', claimed, 'expires-at', expires)
write_fields(CAMPAIGN, {['queue'] = queue, ['opens-at'] = opens_at, ['closes-at'] = closes_at,
  ['challenge-cost'] = challenge_cost})
for _, key in ipairs({CAMPAIGN, CLAIMS, OUTBOX}) do
  redis.call('PEXPIREAT', key, expires)
end
local reply = campaign_reply()
reply[1] = 'written'
reply[#reply + 1] = 'created'
reply[#reply + 1] = held[2] and 0 or 1
return reply
