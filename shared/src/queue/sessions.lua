-- Sessions, after presence.lua: how many are live and how long a session holds its place,
-- which the wait estimate takes.

local function live_active_count()
  return redis.call('ZCOUNT', ACTIVE, '(' .. NOW, '+inf')
end

-- How long sessions really last: buyers who pay or leave end theirs early. An ended
-- session's length waits in `meta` (pending-ms, pending-sessions, and its bucket's pc<k> and
-- pm<k>) until a promotion admits someone, and only then counts (fold_session_lengths): the
-- expected length changes only when every waiter's position does, so no estimate rises while
-- a position holds. A session's length here is how long it holds its place: one that runs out
-- holds it until the tick that takes it back, half a tick past its end on average (RUN_OUT_MS).
--
-- Two estimates, blended by how many sessions have ended (n, faded as below):
-- * the first ending's: the first sessions to end are the short ones, so the live ones count
--   too, each as the length it is expected to reach: the ended sessions' mean, or, when longer,
--   its age plus what it is expected to last yet. That is three quarters of what its length
--   leaves it (an even chance that it runs out, else ending halfway), or, when the ended mean
--   is shorter, the geometric mean of the two, which keeps one very short ending from being
--   outweighed by a long session length. It alone holds while one session has ended.
-- * the lengths' own: a product-limit (Kaplan–Meier) survival curve over half-octave buckets of
--   length, from the ended sessions and the live ones (censored at their age), and past the
--   oldest length seen, the hazard of the last octave seen, capped by running out. It alone
--   holds once ten sessions have ended; between, the geometric blend moves with n.
-- On the curve, a session counts with a weight that halves every 0.69 session lengths since it
-- began (e^(-t / length), start_weight): the sessions a live one overlaps. Until a session has
-- ended, sessions are expected to run out.
local RUN_OUT_MS = SESSION_MS + TICK_MS / 2
-- Live sessions sampled (by rank in the active set) for their ages at a fold.
local AGE_SAMPLES = 8
-- The length buckets: bucket k (0-based) holds lengths from BUCKET_TOP * 2^((k - BUCKETS) / 2)
-- to the next edge; bucket 0 from 0. The last holds the rest.
local BUCKETS = 16
local BUCKET_TOP = RUN_OUT_MS
local function bucket_edge(k)
  if k <= 0 then return 0 end
  return BUCKET_TOP * 2 ^ ((k - BUCKETS) / 2)
end
local function bucket_of(ms)
  if ms <= 0 then return 0 end
  local k = math.floor(2 * math.log(ms / BUCKET_TOP) / math.log(2)) + BUCKETS
  return math.max(0, math.min(BUCKETS - 1, k))
end
-- Ended sessions it takes for the lengths' own estimate to hold alone.
local TRUSTED_ENDINGS = 10
-- Ended sessions it takes for the high end to follow the lengths alone: fewer endings give a
-- mean that may be far off (ten exponential lengths: outside 0.67–1.5 of the truth one time
-- in five), so the range stays wide for longer than the estimate takes to move.
local TRUSTED_HIGH_ENDINGS = 40

-- A session's weight on the curve, by its start: e^(-(now - start) / length). An ended one of
-- `ms` weighs e^(-ms / length) beside one ending now, and the fade does the rest; a live one of
-- age `ms` the same. Weighing by start, not by end, keeps the curve a cohort's: the live
-- sessions, which are mostly the long ones, and the long ones that ended are not both counted.
local function start_weight(ms)
  return math.exp(-ms / SESSION_MS)
end

local function note_session_lengths(lengths)
  local sum, count = 0, 0
  for _, ms in ipairs(lengths) do
    sum, count = sum + ms, count + 1
    local k, w = bucket_of(ms), start_weight(ms)
    redis.call('HINCRBYFLOAT', META, 'pc' .. k, string.format('%.6g', w))
    redis.call('HINCRBYFLOAT', META, 'pm' .. k, string.format('%.9g', w * ms))
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

-- The ended lengths by bucket, {count, ms} each, faded by `fade`, from the meta field
-- `ended-hist` ("k:count:ms,..."), with the pending ones added.
local function ended_buckets(stored_hist, fade, pending)
  local buckets = {}
  for k = 0, BUCKETS - 1 do buckets[k] = {0, 0} end
  if stored_hist then
    for k, c, m in string.gmatch(stored_hist, '(%d+):([%d.e+-]+):([%d.e+-]+)') do
      local b = buckets[tonumber(k)]
      if b then b[1], b[2] = tonumber(c) * fade, tonumber(m) * fade end
    end
  end
  for k = 0, BUCKETS - 1 do
    local c, m = tonumber(pending[2 * k + 1]), tonumber(pending[2 * k + 2])
    if c then buckets[k][1], buckets[k][2] = buckets[k][1] + c, buckets[k][2] + (m or 0) end
  end
  return buckets
end

-- The lengths' own mean, in ms: the product-limit curve over the buckets, the live sessions
-- `ages` (each standing for `live / #ages`) censored at their age; past the last bucket anyone
-- reached, the survivors last what the last octave's hazard gives, up to running out. Also
-- the mean of what the sampled live sessions are expected to last yet (each its residual life
-- on the curve, ∫ S from its age ÷ S at its age), and how many sessions the curve saw end. Nil
-- when none has.
local function lengths_own_mean(buckets, ages, live)
  local weight = #ages > 0 and live / #ages or 0
  local deaths, at_risk = 0, 0
  for k = 0, BUCKETS - 1 do deaths = deaths + buckets[k][1] end
  if deaths <= 0 then return nil end
  at_risk = deaths
  for _, a in ipairs(ages) do at_risk = at_risk + weight * start_weight(a) end
  local survival, area, edge = 1, 0, 0
  local recent_deaths, recent_exposure = 0, 0
  -- Per bucket seen: its edges, the curve at its start and end, and its area.
  local seen = {}
  for k = 0, BUCKETS - 1 do
    if at_risk <= 1e-9 then break end
    local low, high = bucket_edge(k), bucket_edge(k + 1)
    if k == BUCKETS - 1 then high = math.max(high, RUN_OUT_MS) end
    local dead, dead_ms = buckets[k][1], buckets[k][2]
    local censored, censored_ms = 0, 0
    for _, a in ipairs(ages) do
      if a >= low and (a < high or k == BUCKETS - 1) then
        local w = weight * start_weight(a)
        censored, censored_ms = censored + w, censored_ms + w * a
      end
    end
    -- Exposure inside the bucket: those who outlived it whole, those who ended or were
    -- censored inside it for the part they lived.
    local through = at_risk - dead - censored
    local exposure = through * (high - low) + (dead_ms - dead * low) + (censored_ms - censored * low)
    local hazard = dead / math.max(at_risk - censored / 2, dead, 1e-9)
    local after = survival * (1 - hazard)
    -- Those who end inside the bucket end, on average, at their own mean length.
    local mean_end = dead > 0 and dead_ms / dead or (low + high) / 2
    local inside = after * (high - low) + (survival - after) * (mean_end - low)
    area = area + inside
    seen[#seen + 1] = {low, high, survival, after, inside}
    if exposure > 0 then
      -- The last octave: this bucket and the one before (recent_* hold at most two).
      recent_deaths, recent_exposure = dead + recent_deaths / 2, exposure + recent_exposure / 2
    end
    survival, edge = after, high
    at_risk = through
  end
  local tail = 0
  if survival > 1e-9 and edge < RUN_OUT_MS then
    -- Past the oldest length seen: the last octave's hazard, capped by running out.
    local left = RUN_OUT_MS - edge
    local lasts = left
    if recent_deaths > 0 and recent_exposure > 0 then
      local rate = recent_deaths / recent_exposure
      lasts = (1 - math.exp(-rate * left)) / rate
    end
    tail = survival * lasts
    area = area + tail
  end
  -- What a session of age `a` is expected to last yet: the area past `a` ÷ the curve at `a`
  -- (linear inside a bucket).
  local function residual(a)
    local past, at = tail, survival
    for i = #seen, 1, -1 do
      local low, high, s0, s1, inside = seen[i][1], seen[i][2], seen[i][3], seen[i][4], seen[i][5]
      if a >= high then break end
      if a <= low then
        past, at = past + inside, s0
      else
        local f = (a - low) / (high - low)
        past, at = past + inside * (1 - f), s0 - f * (s0 - s1)
        break
      end
    end
    if at <= 1e-9 then return 0 end
    return past / at
  end
  local rest = 0
  for _, a in ipairs(ages) do rest = rest + residual(a) / #ages end
  return area, rest, deaths
end

-- Counts the sessions ended since the last fold, and refreshes the expected session length
-- (`session-mean-ms`), its high (`session-high-ms`) and `session-low` from them and the live
-- sessions' ages. Called when a promotion admitted someone, and when the queue's first session
-- ends early.
local function fold_session_lengths()
  local fields = {'ended-ms', 'ended-count', 'ended-at', 'pending-ms', 'pending-sessions',
    'ended-hist'}
  local pending_fields = {}
  for k = 0, BUCKETS - 1 do
    pending_fields[#pending_fields + 1] = 'pc' .. k
    pending_fields[#pending_fields + 1] = 'pm' .. k
  end
  local stored = redis.call('HMGET', META, unpack(fields))
  local pending = redis.call('HMGET', META, unpack(pending_fields))
  local ended_ms, ended = tonumber(stored[1]) or 0, tonumber(stored[2]) or 0
  local fade = math.exp(-math.max(0, NOW - (tonumber(stored[3]) or NOW)) / SESSION_MS)
  local buckets = ended_buckets(stored[6], fade, pending)
  if not stored[6] and ended > 0 then
    -- Lengths counted before the buckets: all at their mean.
    local k = bucket_of(ended_ms / ended)
    buckets[k][1], buckets[k][2] = buckets[k][1] + ended * fade, buckets[k][2] + ended_ms * fade
  end
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
  local first = (ended_ms + live * reach) / (ended + live)
  local mean, high, rest = first, SESSION_MS + TICK_MS, 0
  local own, own_rest = lengths_own_mean(buckets, ages, live)
  if own and ended > 1 then
    local trust = math.min(1, (ended - 1) / (TRUSTED_ENDINGS - 1))
    own = math.max(1, math.min(own, RUN_OUT_MS))
    mean = first ^ (1 - trust) * own ^ trust
    local trust_high = math.min(1, (ended - 1) / (TRUSTED_HIGH_ENDINGS - 1))
    high = (SESSION_MS + TICK_MS) ^ (1 - trust_high)
      * math.min(SESSION_MS + TICK_MS, 1.6 * own) ^ trust_high
    rest = trust * math.min(own_rest, RUN_OUT_MS)
  end
  SESSION_MEAN_MS = math.floor(mean)
  SESSION_HIGH_MS = math.floor(math.max(high, mean))
  SESSION_REST_MS = math.floor(rest)
  local low, share = math.floor(age), 1000
  if ended_mean then low, share = math.floor(math.min(ended_mean, 0.6 * mean)), 0 end
  SESSION_LOW = {low, share, NOW}
  local hist = {}
  for k = 0, BUCKETS - 1 do
    if buckets[k][1] > 1e-6 then
      hist[#hist + 1] = string.format('%d:%.6g:%.9g', k, buckets[k][1], buckets[k][2])
    end
  end
  redis.call('HSET', META, 'session-mean-ms', SESSION_MEAN_MS,
    'session-high-ms', SESSION_HIGH_MS, 'session-rest-ms', SESSION_REST_MS,
    'ended-ms', string.format('%.17g', ended_ms), 'ended-count', string.format('%.17g', ended),
    'ended-at', NOW, 'session-low', string.format('%d:%d:%d', low, share, NOW),
    'ended-hist', table.concat(hist, ','))
  redis.call('HDEL', META, 'pending-ms', 'pending-sessions', unpack(pending_fields))
end

-- The expected length of a session, the low one and the high one, in ms, as the estimates
-- take them, and what a live session is expected to last yet at the least
-- (`session-rest-ms`: the live sessions' mean residual life, 0 until the lengths are known).
-- Before any fold a session is expected to run out. The low length is `session-low`, at most
-- the expected one; the high, `session-high-ms`, at least the expected one and at most a
-- session run out and taken back a tick late.
local function session_lengths()
  local mean = math.floor(math.min(SESSION_MEAN_MS or RUN_OUT_MS, SESSION_MS + TICK_MS))
  local known = SESSION_LOW[1] + math.max(0, NOW - SESSION_LOW[3]) * SESSION_LOW[2] / 1000
  local high = math.max(mean, math.min(SESSION_HIGH_MS or SESSION_MS + TICK_MS, SESSION_MS + TICK_MS))
  return mean, math.floor(math.max(0, math.min(mean, known))), high,
    math.min(SESSION_REST_MS or 0, mean)
end
