-- Shared prelude of the coupon scripts that read a campaign; the script's own body follows.
-- Its first key is CAMPAIGN, the campaign hash. Time is the server's clock (TIME). Every
-- coupon script answers a tag, then name/value pairs (store/reply.rs reads them).
local CAMPAIGN = KEYS[1]
local clock = redis.call('TIME')
local NOW = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)

-- The campaign's fields {quantity, claimed, opens-at, closes-at, queue, expires-at, locator,
-- challenge-cost} (false for what is unset; a challenge cost: claims solve a challenge
-- first); or nil and the answer when it is not here: {'elsewhere', 'queue', queue} for the
-- locator of a campaign kept under its queue's tag, {'unknown'} when there is none.
local function read_campaign()
  local c = redis.call('HMGET', CAMPAIGN, 'quantity', 'claimed', 'opens-at', 'closes-at',
    'queue', 'expires-at', 'locator', 'challenge-cost')
  if not c[1] then
    if c[7] then return nil, {'elsewhere', 'queue', c[7]} end
    return nil, {'unknown'}
  end
  return c
end

-- The campaign as every script answers it: {'campaign', 'quantity', quantity, 'claimed',
-- claimed, 'opens-at', ms, 'closes-at', ms, 'queue', queue, 'expires-at', ms,
-- 'challenge-cost', cost} ('' for what is unset), or read_campaign's answer.
local function campaign_reply()
  local c, absent = read_campaign()
  if not c then return absent end
  return {'campaign', 'quantity', c[1], 'claimed', c[2] or '0', 'opens-at', c[3] or '',
    'closes-at', c[4] or '', 'queue', c[5] or '', 'expires-at', c[6] or '',
    'challenge-cost', c[8] or ''}
end
