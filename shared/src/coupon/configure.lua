-- Configure: keys CAMPAIGN, CLAIMS and OUTBOX. Arguments: mode, 'locator' or 'campaign';
-- queue, the queue id ('' for none); quantity; opens_at and closes_at, in ms ('' for none);
-- expires, the instant every key of the campaign expires (ms); write, 'write', or 'check' to
-- answer as a write would and write nothing; challenge_cost, the door's cost ('' for no
-- challenge).
-- 'locator' writes, under the campaign's own tag, which queue's tag holds a campaign; it is
-- refused ({'home-differs', queue or ''}) when the campaign lives elsewhere already.
-- 'campaign' creates or updates the campaign itself; refused with {'home-differs', queue}
-- where only a locator is, and with {'below-claimed', claimed} when the quantity would fall
-- below what was claimed. Answers {'ok', created}, followed by campaign_reply() for a
-- campaign written.
local CLAIMS, OUTBOX = KEYS[2], KEYS[3]
local mode, queue, quantity = ARGV[1], ARGV[2], tonumber(ARGV[3])
local opens_at, closes_at, expires, write = ARGV[4], ARGV[5], ARGV[6], ARGV[7] == 'write'
local challenge_cost = ARGV[8]
local held = redis.call('HMGET', CAMPAIGN, 'locator', 'quantity', 'claimed')

if mode == 'locator' then
  if held[2] then return {'home-differs', ''} end
  if held[1] and held[1] ~= queue then return {'home-differs', held[1]} end
  if write then
    redis.call('HSET', CAMPAIGN, 'locator', queue, 'expires-at', expires)
    redis.call('PEXPIREAT', CAMPAIGN, expires)
  end
  return {'ok', held[1] and 0 or 1}
end

if held[1] then return {'home-differs', held[1]} end
local claimed = tonumber(held[3] or '0')
if quantity < claimed then return {'below-claimed', claimed} end
if not write then return {'ok', held[2] and 0 or 1} end
redis.call('HSET', CAMPAIGN, 'quantity', quantity, 'claimed', claimed, 'expires-at', expires)
write_fields(CAMPAIGN, {['queue'] = queue, ['opens-at'] = opens_at, ['closes-at'] = closes_at,
  ['challenge-cost'] = challenge_cost})
for _, key in ipairs({CAMPAIGN, CLAIMS, OUTBOX}) do
  redis.call('PEXPIREAT', key, expires)
end
local reply = campaign_reply()
table.insert(reply, 1, held[2] and 0 or 1)
table.insert(reply, 1, 'ok')
return reply
