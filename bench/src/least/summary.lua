-- The least a summary script can run and keep the summary's answer, carrying its keys and
-- arguments: the server's clock (live sessions are those not yet ended), the settings it
-- reports, meta's admitted-through and rate, and the two counts. It leaves out what summary
-- also does: meta's other fields and the outage grace, the priority lane's count and the
-- draw's seed. It writes nothing.
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local s = redis.call('HMGET', KEYS[5], 'capacity', 'session-ms', 'idle-ms', 'admit-per-tick',
  'paused', 'mode', 'sold-out', 'message', 'max-waiting', 'opens-at', 'closes-at',
  'prequeue-opens-at', 'draw-commit', 'draw-members', 'lane', 'lane-before-opening')
local meta = redis.call('HMGET', KEYS[4], 'admitted-through', 'rate')
local waiting = redis.call('ZCARD', KEYS[1])
local active = redis.call('ZCOUNT', KEYS[2], '(' .. now, '+inf')
return {waiting, active, meta[2] or '', tonumber(meta[1]) or 0,
  {tonumber(s[1] or ARGV[1]), tonumber(s[2] or ARGV[2]), tonumber(s[4] or ARGV[4]),
    tonumber(s[3] or ARGV[3]), s[5] == '1' and 1 or 0,
    {s[6] or 'queue', s[7] == '1' and 1 or 0, s[8] or '', tonumber(s[9]) or 0},
    {s[10] or '', s[11] or '', s[12] or ''}, s[16] == '1' and 1 or 0},
  {s[13] or '', '', ''}}
