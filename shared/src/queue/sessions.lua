-- Sessions, after presence.lua: how many are live and how long a session holds its place,
-- which the wait estimate takes.

local function live_active_count()
  return redis.call('ZCOUNT', ACTIVE, '(' .. NOW, '+inf')
end

-- How long sessions really last: buyers who pay or leave end theirs early. An ended
-- session's length waits in `meta` (pending-ms, pending-sessions) until a promotion admits
-- someone, and only then counts (fold_session_lengths): the expected length changes only
-- when every waiter's position does, so no estimate rises while a position holds.
-- A session's length here is how long it holds its place: one that runs out holds it until
-- the tick that takes it back, half a tick past its end on average (RUN_OUT_MS).
-- The first sessions to end are the short ones, so the live ones count too, each as the
-- length it is expected to reach: the ended sessions' mean, or, when longer, its age plus
-- what it is expected to last yet. That is three quarters of what its length leaves it (an
-- even chance that it runs out, else ending halfway), or, when the ended mean is shorter, the
-- geometric mean of the two: the first sessions to end are the short ones, so their mean
-- alone would expect too little of the live ones, and the geometric mean keeps one very
-- short ending from being outweighed by a long session length. Ended sessions
-- count with a weight that halves every 0.69 session lengths (e^(-t / length)): the
-- sessions a live one overlaps. Until a session has ended, sessions are expected to run out.
local RUN_OUT_MS = SESSION_MS + TICK_MS / 2
-- Live sessions sampled (by rank in the active set) for their ages at a fold.
local AGE_SAMPLES = 4
local function note_session_lengths(lengths)
  local sum, count = 0, 0
  for _, ms in ipairs(lengths) do
    sum, count = sum + ms, count + 1
  end
  if count == 0 then return end
  redis.call('HINCRBY', META, 'pending-ms', sum)
  redis.call('HINCRBY', META, 'pending-sessions', count)
end

-- The live sessions' ages, AGE_SAMPLES of them spread by rank, and how many are live. A
-- session's age is read from its end (the active set's score) less the length.
local function live_ages()
  local lapsed = redis.call('ZCOUNT', ACTIVE, '-inf', NOW)
  local live = redis.call('ZCARD', ACTIVE) - lapsed
  local ages = {}
  if live <= 0 then return ages, 0 end
  local samples = math.min(AGE_SAMPLES, live)
  for k = 0, samples - 1 do
    local index = lapsed + math.floor((k + 0.5) * live / samples)
    local entry = redis.call('ZRANGE', ACTIVE, index, index, 'WITHSCORES')
    local age = #entry == 2 and NOW - (tonumber(entry[2]) - SESSION_MS) or 0
    ages[#ages + 1] = math.max(0, math.min(SESSION_MS, age))
  end
  return ages, live
end

-- What the low end of a range takes a session to last (meta `session-low`,
-- "ms:permille:at"): once sessions have ended, their mean (which the short ones, ending
-- first, keep low); before that, the mean age of the live sessions at instant `at`, which
-- grows with time (permille 1000; 0 once sessions have ended).
local SESSION_LOW = {0, 0, NOW}
if meta[10] then
  local ms, share, at = string.match(meta[10], '^(%d+):(%d+):(%d+)$')
  if at then SESSION_LOW = {tonumber(ms), tonumber(share), tonumber(at)} end
end

-- Counts the sessions ended since the last fold, and refreshes the expected session length
-- (`session-mean-ms`) and `session-low` from them and the live sessions' ages. Called when a
-- promotion admitted someone, and when the queue's first session ends early.
local function fold_session_lengths()
  local stored = redis.call('HMGET', META, 'ended-ms', 'ended-count', 'ended-at', 'pending-ms',
    'pending-sessions')
  local ended_ms, ended = tonumber(stored[1]) or 0, tonumber(stored[2]) or 0
  local fade = math.exp(-math.max(0, NOW - (tonumber(stored[3]) or NOW)) / SESSION_MS)
  ended_ms = ended_ms * fade + (tonumber(stored[4]) or 0)
  ended = ended * fade + (tonumber(stored[5]) or 0)
  local ages, live = live_ages()
  if ended <= 0 and live == 0 then return end
  local ended_mean = ended > 0 and ended_ms / ended or nil
  local reach, age = 0, 0
  for _, a in ipairs(ages) do
    age = age + a / #ages
    local reaches = RUN_OUT_MS
    if ended_mean then
      local left = (RUN_OUT_MS - a) * 3 / 4
      reaches = math.max(ended_mean, a + math.sqrt(left * math.min(left, ended_mean)))
    end
    reach = reach + reaches / #ages
  end
  SESSION_MEAN_MS = math.floor((ended_ms + live * reach) / (ended + live))
  local low, share = math.floor(age), 1000
  if ended_mean then low, share = math.floor(ended_mean), 0 end
  SESSION_LOW = {low, share, NOW}
  redis.call('HSET', META, 'session-mean-ms', SESSION_MEAN_MS,
    'ended-ms', string.format('%.17g', ended_ms), 'ended-count', string.format('%.17g', ended),
    'ended-at', NOW, 'session-low', string.format('%d:%d:%d', low, share, NOW))
  redis.call('HDEL', META, 'pending-ms', 'pending-sessions')
end

-- The expected length of a session and the low one, in ms, as the estimates take them.
-- Before any fold a session is expected to run out. The low length is `session-low`, at
-- most the expected one.
local function session_lengths()
  local mean = math.floor(math.min(SESSION_MEAN_MS or RUN_OUT_MS, SESSION_MS + TICK_MS))
  local known = SESSION_LOW[1] + math.max(0, NOW - SESSION_LOW[3]) * SESSION_LOW[2] / 1000
  return mean, math.floor(math.max(0, math.min(mean, known)))
end
