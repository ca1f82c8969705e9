-- Pending: keys CAMPAIGN, CLAIMS and OUTBOX; most, the most entries. The oldest outbox
-- entries, flat: user, claim number, claimed-at ms, ... . Writes nothing; an entry leaves
-- the outbox only when the publisher removes it after EventBridge accepted it.
local CLAIMS, OUTBOX = KEYS[2], KEYS[3]
local most = tonumber(ARGV[1])
local entries = redis.call('ZRANGE', OUTBOX, 0, most - 1, 'WITHSCORES')
local reply = {}
for i = 1, #entries, 2 do
  local held = redis.call('HGET', CLAIMS, entries[i])
  local at = held and string.match(held, ':(%d+)$') or '0'
  reply[#reply + 1] = entries[i]
  reply[#reply + 1] = entries[i + 1]
  reply[#reply + 1] = at
end
return reply
