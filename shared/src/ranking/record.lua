-- Payment records: what a payment's dedupe record holds and where it lives (record.rs has the
-- why). Concatenated after windows.lua and before fold.lua: apply.lua finds and writes
-- records, fold.lua notes where a payment counted and reads what a refund takes back.
--
-- A record is one field of a group hash: the field is 12 bytes of the payment id's SHA-256
-- (Rust gives them in hex), the value RECORD_FORMAT's 32 bytes, then the genres as text:
--   concert   the concertId's fingerprint (4 bytes)
--   seats     the seats first delivered
--   left      the seats not yet refunded
--   counted   the boards the fold counted the payment on, as bits: 1 daily, 2 weekly,
--             4 monthly, 8 all-time, 16 last-24h, 32 last-7d, 64 trending generation k,
--             128 generation k + 1; 0 until it is folded
--   day       the payment's day in the ranking zone, yyyymmdd
--   week      its ISO week + 64 × (week-based year − year + 1)
--   b         its rolling bucket
--   k         its first trending generation
--   w         its weight on generation k (on k + 1 it is w / 4096, exactly)
--   genres    comma-separated, in the order the payment gave them
-- A group is '<REC.group><end>:<slot>', <end> the hour it ends; REC.index lists the ends.
-- Each group also holds GROUP_MARK under the empty field: a value longer than a listpack's
-- (hash-max-listpack-value, 64 by default) makes Redis keep the group as a hash table from
-- its first record, so a lookup costs the same at any size. A listpack of a few hundred
-- records would be searched entry by entry, and a lookup reads five or six groups.
local RECORD_FORMAT = '>I4I3I3BI4BI4I4d'
local GROUP_MARK = 'lineup payment records: a hash table from its first record, so that ' ..
  'a lookup costs the same whatever its size'
local COUNTED_PERIODS, COUNTED_WINDOWS, COUNTED_TREND = 1, 16, 64

local function encode_record(r)
  return struct.pack(RECORD_FORMAT, r.concert, r.seats, r.left, r.counted, r.day, r.week, r.b,
    r.k, r.w) .. r.genres
end

local function decode_record(value)
  local r = {}
  local rest
  r.concert, r.seats, r.left, r.counted, r.day, r.week, r.b, r.k, r.w, rest =
    struct.unpack(RECORD_FORMAT, value)
  r.genres = string.sub(value, rest)
  return r
end

-- The field's 12 bytes from Rust's 24 hex digits.
local function record_field(hex)
  return struct.pack('>I4I4I4', tonumber(string.sub(hex, 1, 8), 16),
    tonumber(string.sub(hex, 9, 16), 16), tonumber(string.sub(hex, 17, 24), 16))
end

local function has_bit(bits, bit)
  return math.floor(bits / bit) % 2 == 1
end

-- The ends of the groups still live at `now`, read once per call; and the group this call
-- writes to.
local live_ends, write_end = nil, nil

local function live_groups(rec, now)
  if not live_ends then
    live_ends = redis.call('ZRANGE', rec.index, '(' .. now, '+inf', 'BYSCORE')
  end
  return live_ends
end

-- The record of `op` ({slot, field}), from any live group: its group and its fields, or nil.
local function find_record(rec, op, now)
  for _, group_end in ipairs(live_groups(rec, now)) do
    local group = rec.group .. group_end .. ':' .. op.slot
    local value = redis.call('HGET', group, op.field)
    if value then return group, decode_record(value) end
  end
  return nil
end

-- How long before its end the tick unlinks a group (sweep_group).
local SWEEP_SECONDS = 3600

-- Writes a new record `r` for `op` into the group of this call: the one ending at the first
-- multiple of the span at or after now + ttl + SWEEP_SECONDS, so that the record outlives
-- the dedupe window even when the tick unlinks its group early. The group ends then, and the
-- index with its last group. The call that lists a group makes each of its slots, marked
-- and ending at its end. Returns the group.
local function write_record(rec, op, r, now, ttl)
  local span = rec.span * 3600
  if not write_end then
    write_end = math.ceil((now + ttl + SWEEP_SECONDS) / span) * span / 3600
    local ends = live_groups(rec, now)
    local last, listed = write_end, false
    for _, group_end in ipairs(ends) do
      if tonumber(group_end) == write_end then listed = true end
      last = math.max(last, tonumber(group_end))
    end
    if not listed then
      redis.call('ZADD', rec.index, write_end * 3600, write_end)
      redis.call('ZREMRANGEBYSCORE', rec.index, '-inf', now)
      ends[#ends + 1] = tostring(write_end)
      for slot = 0, rec.slots - 1 do
        local group = rec.group .. write_end .. ':' .. slot
        redis.call('HSET', group, '', GROUP_MARK)
        redis.call('EXPIREAT', group, write_end * 3600)
      end
    end
    expiries[rec.index] = last * 3600
  end
  local group = rec.group .. write_end .. ':' .. op.slot
  redis.call('HSET', group, op.field, encode_record(r))
  -- Ends at its end even if it was gone (evicted) and this write made it anew.
  expiries[group] = write_end * 3600
  return group
end

-- Unlinks the first group that ends within SWEEP_SECONDS, and takes it off the index: UNLINK
-- frees a large hash off Redis's main thread, where its expiry would free it on it. No record
-- is written to such a group (write_record). Returns whether there was one.
local function sweep_group(rec, now)
  local ending = redis.call('ZRANGE', rec.index, '-inf', now + SWEEP_SECONDS, 'BYSCORE',
    'LIMIT', 0, 1)
  if #ending == 0 then return false end
  local slots = {}
  for slot = 0, rec.slots - 1 do slots[#slots + 1] = rec.group .. ending[1] .. ':' .. slot end
  redis.call('UNLINK', unpack(slots))
  redis.call('ZREM', rec.index, ending[1])
  return true
end

-- Rewrites a record in place (a refund's seats, the fold's counted boards). A record whose
-- group has ended is not written again.
local function update_record(group, field, change)
  local value = redis.call('HGET', group, field)
  if not value then return end
  local r = decode_record(value)
  change(r)
  redis.call('HSET', group, field, encode_record(r))
end

-- The buckets of the calendar boards a record's day falls in, in Period::ALL's order
-- (daily, weekly, monthly, all-time), named as period.rs's Period::bucket names them.
local function calendar_buckets(day, week)
  local y, m, d = math.floor(day / 10000), math.floor(day / 100) % 100, day % 100
  return {string.format('%04d-%02d-%02d', y, m, d),
    string.format('%d-W%02d', y + math.floor(week / 64) - 1, week % 64),
    string.format('%04d-%02d', y, m), 'all'}
end

local function split_genres(csv)
  local genres = {}
  for g in string.gmatch(csv, '[^,]+') do genres[#genres + 1] = g end
  return genres
end

-- Where a payment whose record is gone counted, as far as a refund can tell: nowhere.
local function counted_nowhere()
  return {calendar = {}, windows = {}, genres = {}, trend = {}}
end

-- What a refund takes back from, by the record: {calendar = {board key...}, b, windows =
-- {counted?...}, genres, trend = {{key, weight}...}} (windows.lua's windows_refund reads the
-- rest). `win` names the boards (keys.rs window_templates).
local function record_counted_on(r, win)
  local counted = counted_nowhere()
  counted.b, counted.genres = r.b, split_genres(r.genres)
  for i, bucket in ipairs(calendar_buckets(r.day, r.week)) do
    if has_bit(r.counted, COUNTED_PERIODS * 2 ^ (i - 1)) then
      local board = win.calendar .. win.periods[i] .. ':' .. bucket
      counted.calendar[#counted.calendar + 1] = board
      for _, g in ipairs(counted.genres) do
        counted.calendar[#counted.calendar + 1] = board .. win.genre .. g
      end
    end
  end
  for i in ipairs(win.windows) do
    counted.windows[i] = has_bit(r.counted, COUNTED_WINDOWS * 2 ^ (i - 1))
  end
  for at = 1, 2 do
    if has_bit(r.counted, COUNTED_TREND * 2 ^ (at - 1)) then
      counted.trend[#counted.trend + 1] = {win.trending .. (r.k + at - 1),
        r.w / 4096 ^ (at - 1)}
    end
  end
  return counted
end
