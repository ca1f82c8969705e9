-- The promoter's lease (lease.rs LEASE names the keys and arguments): one holder at a time.
-- The holder renews it; another takes it once it has lapsed, with the next fence, which the
-- tick's writes carry so that each stripe refuses an older holder's.
-- Returns a tag and named fields (lease.rs Lease): {'held', 'for_ms', ms left} |
-- {'renewed', 'fence', n} | {'taken', 'fence', n}.
local LEASE, FENCE = KEYS[1], KEYS[2]
local holder, ttl_ms, keep_ms = ARGV[1], ARGV[2], ARGV[3]
local current = redis.call('GET', LEASE)
if current and current ~= holder then return {'held', 'for_ms', redis.call('PTTL', LEASE)} end
redis.call('SET', LEASE, holder, 'PX', ttl_ms)
local outcome, fence = 'renewed', redis.call('GET', FENCE)
if not current or not fence then outcome, fence = 'taken', redis.call('INCR', FENCE) end
redis.call('PEXPIRE', FENCE, keep_ms)
return {outcome, 'fence', fence}
