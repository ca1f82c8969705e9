-- Many concerts' standing on one board, in one call (concerts.rs CONCERTS names the keys and
-- arguments). Keys: ranked, the board ranked by (a seat or a rate board); seat_board;
-- details, the details hash; previous, the same kind of board one bucket before (given where
-- movement is shown and that bucket is kept). Arguments: ids…, the concert ids, sorted and
-- each given once.
-- Four bulk reads (ZCARD, ZMSCORE on ranked, on the seat board for a rate read, and on
-- previous; HMGET of the details), then one ZCOUNT per distinct score found, for the
-- competition ranks: so the call grows with the ids asked, never with the board.
-- Returns total, then per id: rank (competition style on ranked; false when not on it), the
-- seat score as stored (false when none), the capacity from the details' "<updatedAtMs>
-- <capacity> <json>" (false when unknown), and the previous rank (competition style on
-- previous; 0 when not on it; false without previous).
local ranked, seat_board, details, previous = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local ids_from = 1
local count = #ARGV - ids_from + 1
local total = redis.call('ZCARD', ranked)
local scores = redis.call('ZMSCORE', ranked, unpack(ARGV, ids_from))
local seats = scores
if ranked ~= seat_board then
  seats = redis.call('ZMSCORE', seat_board, unpack(ARGV, ids_from))
end
local shown = redis.call('HMGET', details, unpack(ARGV, ids_from))
local old = previous and redis.call('ZMSCORE', previous, unpack(ARGV, ids_from))
-- A competition rank on `key` for each distinct score: one ZCOUNT each.
local function ranker(key)
  local known = {}
  return function(score)
    local rank = known[score]
    if not rank then
      rank = redis.call('ZCOUNT', key, '-inf', '(' .. score) + 1
      known[score] = rank
    end
    return rank
  end
end
local rank_now = ranker(ranked)
local rank_before = previous and ranker(previous)
local out = {total}
for j = 1, count do
  local capacity, value = false, shown[j]
  if value then
    local a = string.find(value, ' ', 1, true)
    local b = a and string.find(value, ' ', a + 1, true)
    if not b then error('malformed concert details of ' .. ARGV[ids_from + j - 1]) end
    capacity = string.sub(value, a + 1, b - 1)
  end
  local before = false
  if old then
    before = old[j] and rank_before(old[j]) or 0
  end
  local n = #out
  out[n + 1] = scores[j] and rank_now(scores[j]) or false
  out[n + 2], out[n + 3], out[n + 4] = seats[j] or false, capacity, before
end
return out
