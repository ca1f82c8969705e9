-- Issue: ARGV[ARG] user, ARGV[ARG + 1] source IP ('' when unknown), ARGV[ARG + 2] and
-- ARGV[ARG + 3] the most issue requests per minute per user and per IP in this queue
-- (0: no limit), ARGV[ARG + 4] who may create a queue ('open' or 'operator'), ARGV[ARG + 5]
-- 1 when the caller has just put the queue in the registry, ARGV[ARG + 6] the draw commitment
-- the caller computed ARGV[ARG + 7], the buyer's draw value, under ('' when it knows none),
-- ARGV[ARG + 8] 1 when the caller calls again after a 'draw-seed' answer (already counted
-- against the rate limits), ARGV[ARG + 9] the SHA-256 (hex) of the buyer's access code ('' when
-- none), ARGV[ARG + 10] what the buyer brought to the door ('' nothing, 'bad' a solution that
-- does not hold, else the serial of a solved challenge) and ARGV[ARG + 11] when its
-- redemption may expire (ms). KEYS[OWN_KEYS] is the redemption bitmap holding that serial
-- (keys.rs redeemed_key; any of the queue's bitmaps without one).
-- A queue exists once an operator gave it settings, or, with open creation, at once. For a
-- queue that does not exist the answer is 'no-queue', and nothing is written. A queue not
-- in the registry is answered 'unregistered', and nothing is written: the caller adds it
-- (within MAX_QUEUES) and calls again with ARGV[ARG + 5] = 1, which marks it registered.
-- A limited request changes nothing but its counters and is answered
-- 'limited' with the ms until the window ends. Otherwise returns the buyer's live entry
-- ('soldout' for a waiter once the queue is sold out). A new arrival is refused, with
-- nothing written, when the queue is sold out ('sold-out'), closed ('closed'), or full
-- ('full', with the ms to retry after): in passthrough mode when no place is free, else when
-- maxWaiting wait already. Otherwise it gets a new ticket, active at once when the queue is
-- not paused, a place is free, nobody waits and the booking system is healthy (HEALTH 1), or
-- in passthrough when a place is free and HEALTH is above 0 (else 'full'). Someone on the
-- priority list joins the priority lane instead (see its block below).
-- With a schedule (docs/draw.md): before the pre-queue opens a new arrival is refused
-- ('not-open', with the ms until it opens), after closesAt as 'closed', the lane's too;
-- before the opening it joins the pre-queue with the ticket its draw value gives, if the
-- caller's commitment is the queue's, else the answer is 'draw-seed' (the seed, for the
-- caller to compute the value and call again).
-- Presale access (docs/door.md): a new arrival the setting `access` does not let in is refused
-- 'access-denied', with nothing written (see its block below).
-- The door (docs/door.md): where the setting `challenge` asks for one, a new arrival without a
-- solved challenge is refused 'challenge-required', one with a bad solution
-- 'challenge-failed', and one whose challenge took a place already 'challenge-replayed'; each
-- writes nothing but the rate-limit counters (see its block below).
local user, ip = ARGV[ARG], ARGV[ARG + 1]
local user_limit, ip_limit = tonumber(ARGV[ARG + 2]), tonumber(ARGV[ARG + 3])
local creation, registered_now = ARGV[ARG + 4], ARGV[ARG + 5]
local commitment, draw_value, again = ARGV[ARG + 6], ARGV[ARG + 7], ARGV[ARG + 8]
local code_hash = ARGV[ARG + 9]
local door, redeemed_until = ARGV[ARG + 10], tonumber(ARGV[ARG + 11])
local REDEEMED = KEYS[OWN_KEYS]

if creation ~= 'open' and redis.call('EXISTS', SETTINGS) == 0 then
  return token_reply(0, 'no-queue')
end
if registered_now == '1' then
  redis.call('HSET', META, 'registered', 1)
  REGISTERED = true
elseif not REGISTERED then
  return token_reply(0, 'unregistered')
end

-- A request sent again after a lost reply (`again`) is not counted twice.
if again ~= '1' then
  local retry_in = over_rate_limit(RATE_KEYS, NOW, user, ip, user_limit, ip_limit)
  if retry_in then
    keep_meta()
    return token_reply(0, 'limited', 0, 0, retry_in)
  end
end

local state, ticket, until_ms, since_ms = find(user, nil)
if state == 'waiting' then
  if SOLD_OUT then return sold_out_reply(state, user, ticket) end
  if BEFORE_OPENING and not IN_LANE then return prequeue_reply(0, ticket) end
  return waiting_reply(0, user, ticket)
elseif state == 'active' then
  return active_reply(0, ticket, until_ms, since_ms)
end

-- A new arrival (or one whose place lapsed).
local FULL_RETRY_MS = 10000
if SOLD_OUT then return token_reply(0, 'sold-out') end
if MODE == 'closed' then return token_reply(0, 'closed') end

-- Presale access, a block of its own: in mode 'list' only those on the access list take a new
-- place; in mode 'code' only one whose code is unbound or bound to them. An unbound code is
-- bound to the buyer (bind_access) only when the place is made, so a refusal writes nothing.
local ACCESS_CODE_HASH = code_hash or ''
local function access_denied()
  if ACCESS_MODE == 'list' then return redis.call('SISMEMBER', ACCESS, user) == 0 end
  if ACCESS_MODE ~= 'code' then return false end
  if ACCESS_CODE_HASH == '' then return true end
  local bound = redis.call('HGET', ACCESS_CODES, ACCESS_CODE_HASH)
  return bound ~= '' and bound ~= user
end
local function bind_access()
  if ACCESS_MODE == 'code' then redis.call('HSET', ACCESS_CODES, ACCESS_CODE_HASH, user) end
end

-- The door, a block of its own: a solved challenge (door.rs) is redeemed, its serial's bit set
-- in the redemption bitmap, only when the place is made (redeem), so a refusal writes nothing.
-- The bitmap lives until the last challenge it redeemed may expire.
local SERIALS_PER_BITMAP = 1048576
local DOOR_SERIAL = tonumber(door)
local function door_refusal()
  if CHALLENGE == 'off' then return nil end
  if door == '' then return 'challenge-required' end
  if not DOOR_SERIAL then return 'challenge-failed' end
  if redis.call('GETBIT', REDEEMED, DOOR_SERIAL % SERIALS_PER_BITMAP) == 1 then
    return 'challenge-replayed'
  end
  return nil
end
local function redeem()
  if CHALLENGE == 'off' or not DOOR_SERIAL then return end
  redis.call('SETBIT', REDEEMED, DOOR_SERIAL % SERIALS_PER_BITMAP, 1)
  if redis.call('PTTL', REDEEMED) < redeemed_until - NOW then
    redis.call('PEXPIREAT', REDEEMED, redeemed_until)
  end
end

-- The next ticket. The ticket clock gains an entry when its last is a second old: a few
-- calls a second at most, whatever the arrival rate. The counter's 1 starts a new clock.
-- Tickets are TICKET_BASE plus the counter (common.lua: a queue with a draw); a pre-queue
-- member's is made of its draw value and the counter (the pre-queue's block below). Each new
-- place first fits the presence span to the line it joins.
local function next_count()
  local issued = redis.call('HINCRBY', META, 'seq', 1)
  if issued == 1 then redis.call('UNLINK', CLOCK) end
  fit_presence(waiting_count() + 1)
  return issued
end
local function issue_ticket()
  bind_access()
  redeem()
  local issued = next_count()
  if issued == 1 or NOW - CLOCK_AT >= 1000 or NOW < CLOCK_AT then
    redis.call('ZADD', CLOCK, TICKET_BASE + issued, string.format('%d', NOW))
    redis.call('PEXPIRE', CLOCK, KEEP_MS)
    redis.call('HSET', META, 'last-issue', NOW, 'clock-at', NOW)
  else
    redis.call('HSET', META, 'last-issue', NOW)
  end
  return TICKET_BASE + issued
end

-- The schedule's gates, for every new place, the lane's too.
if CLOSES_AT and NOW >= CLOSES_AT then return token_reply(0, 'closed') end
if BEFORE_OPENING and PREQUEUE_OPENS_AT and NOW < PREQUEUE_OPENS_AT then
  return token_reply(0, 'not-open', 0, 0, PREQUEUE_OPENS_AT - NOW)
end
if access_denied() then return token_reply(0, 'access-denied') end
local door_refused = door_refusal()
if door_refused then return token_reply(0, door_refused) end

-- The priority lane, a block of its own: the main line's gates (the pre-queue, full) come
-- after it. In queue mode, someone on the operator's list takes a ticket in the lane, behind
-- the lane's waiters and ahead of the whole main line; active at once when the queue is not
-- paused, a place is free, nobody waits in the lane, and the opening has passed (or the lane
-- is admitted before it). A lapsed entry in either line goes.
if MODE == 'queue' and LANE_ON and redis.call('SISMEMBER', PRIORITY, user) == 1 then
  if state == 'dropped' or state == 'expired' then
    record_departures({{user, ticket}}, state)
  end
  if state == 'dropped' then redis.call('ZREM', IN_LANE and LANE or WAITING, user) end
  ticket = issue_ticket()
  if not PAUSED and HEALTH >= 1 and (not BEFORE_OPENING or lane_before_opening())
      and redis.call('ZCARD', LANE) == 0 and live_active_count() < CAPACITY then
    activate(user, ticket, true)
    return active_reply(1, ticket, NOW + SESSION_MS, NOW)
  end
  redis.call('ZADD', LANE, ticket, user)
  IN_LANE = true
  return waiting_reply(1, user, ticket)
end

-- The pre-queue.
if BEFORE_OPENING then
  if MAX_WAITING > 0 and redis.call('ZCARD', WAITING) >= MAX_WAITING then
    return token_reply(0, 'full', 0, 0, FULL_RETRY_MS)
  end
  local value = tonumber(draw_value)
  if not DRAW_COMMIT or commitment ~= DRAW_COMMIT or not value or value < 0
      or value >= DRAW_BASE or value % 1 ~= 0 then
    return token_reply(0, 'draw-seed', 0, 0, 0, redis.call('HGET', SETTINGS, 'draw-seed') or '')
  end
  if state == 'expired' then record_departures({{user, ticket}}, state) end
  -- The draw value's first 28 bits, then the counter as a presence index from 1 to
  -- 2^24 - 1: the draw places the pre-queue, members whose first bits are equal by arrival,
  -- and the members' presence indices are dense, not scattered by the draw.
  local index = (next_count() - 1) % (DRAW_INDEX_SPAN - 1) + 1
  ticket = value - value % DRAW_INDEX_SPAN + index
  bind_access()
  redeem()
  redis.call('ZADD', WAITING, ticket, user)
  redis.call('HSET', META, 'last-issue', NOW)
  return prequeue_reply(1, ticket)
end
if MODE == 'passthrough' then
  if PAUSED or HEALTH <= 0 or live_active_count() >= CAPACITY then
    -- Retry when the first live session ends, within 1 s to FULL_RETRY_MS.
    local first = redis.call('ZRANGEBYSCORE', ACTIVE, '(' .. NOW, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
    local retry = FULL_RETRY_MS
    if #first == 2 then retry = math.max(1000, math.min(FULL_RETRY_MS, tonumber(first[2]) - NOW)) end
    return token_reply(0, 'full', 0, 0, retry)
  end
elseif MAX_WAITING > 0 and redis.call('ZCARD', WAITING) >= MAX_WAITING then
  return token_reply(0, 'full', 0, 0, FULL_RETRY_MS)
end

if state == 'dropped' or state == 'expired' then
  -- The lapsed entry may be replaced below, before a promoter or reaper meets it.
  record_departures({{user, ticket}}, state)
end
-- One dropped from the lane (and no longer on the list) joins the main line.
if state == 'dropped' and IN_LANE then redis.call('ZREM', LANE, user) end

ticket = issue_ticket()
if not PAUSED and (MODE == 'passthrough' or (waiting_count() == 0 and HEALTH >= 1))
    and live_active_count() < CAPACITY then
  -- In passthrough a lapsed waiter is admitted past the line: its old entry goes.
  if state == 'dropped' then redis.call('ZREM', WAITING, user) end
  activate(user, ticket, true)
  return active_reply(1, ticket, NOW + SESSION_MS, NOW)
end
redis.call('ZADD', WAITING, ticket, user)
return waiting_reply(1, user, ticket)
