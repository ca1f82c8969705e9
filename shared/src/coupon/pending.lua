-- Pending: keys CAMPAIGN, CLAIMS and OUTBOX; most, the most entries. The oldest outbox
-- entries, a column each: {'pending', 'users', {user...}, 'numbers', {claim number...},
-- 'at', {claimed-at ms...}}. Writes nothing; an entry leaves the outbox only when the
-- publisher removes it after EventBridge accepted it.
local CLAIMS, OUTBOX = KEYS[2], KEYS[3]
local most = tonumber(ARGV[1])
local entries = redis.call('ZRANGE', OUTBOX, 0, most - 1, 'WITHSCORES')
local users, numbers, at = {}, {}, {}
for i = 1, #entries, 2 do
  local held = redis.call('HGET', CLAIMS, entries[i])
  users[#users + 1] = entries[i]
  numbers[#numbers + 1] = entries[i + 1]
  at[#at + 1] = held and string.match(held, ':(%d+)$') or '0'
end
return {'pending', 'users', users, 'numbers', numbers, 'at', at}
