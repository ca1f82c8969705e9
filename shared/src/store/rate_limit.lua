-- A fixed-window rate limit any script may begin with (store::RATE_LIMIT_LUA): requests per
-- user and per source IP in one-minute windows, counted in two hashes used in turn. Each
-- hash says which window it holds (field 'window'); one still holding an older window is
-- cleared first, and it ends a minute after its window does.

-- Counts this request of `user` from `ip` ('' when unknown, then not counted by IP) at `now`
-- (ms) against `user_limit` and `ip_limit` a minute (0: no limit), in `rate_keys`, the two
-- hashes. Returns the ms until the window ends when the request is over a limit, else nil.
local function over_rate_limit(rate_keys, now, user, ip, user_limit, ip_limit)
  if user_limit <= 0 and (ip_limit <= 0 or ip == '') then return nil end
  local window = math.floor(now / 60000)
  local counters = rate_keys[window % 2 + 1]
  if tonumber(redis.call('HGET', counters, 'window')) ~= window then
    redis.call('UNLINK', counters)
    redis.call('HSET', counters, 'window', window)
    redis.call('PEXPIRE', counters, 120000)
  end
  local over = false
  if user_limit > 0 and redis.call('HINCRBY', counters, 'u:' .. user, 1) > user_limit then
    over = true
  end
  if ip_limit > 0 and ip ~= '' and redis.call('HINCRBY', counters, 'ip:' .. ip, 1) > ip_limit then
    over = true
  end
  if over then return (window + 1) * 60000 - now end
  return nil
end
