-- Many concerts' standing on one board, in one call (concerts.rs CONCERTS names the keys and
-- arguments). Keys: ranked, the board ranked by (a seat or a rate board); seat_board;
-- details, the details hash; previous, the same kind of board one bucket before (given where
-- movement is shown and that bucket is kept). Arguments: ids…, the concert ids, sorted and
-- each given once.
-- Bulk reads (ZCARD and ZMSCORE on ranked; for the concerts on it, ZMSCORE on the seat board
-- for a rate read and on previous, and HMGET of the details), then one ZCOUNT per distinct
-- score found, for the competition ranks: so the call grows with the ids asked, never with
-- the board.
-- Returns total, then per id: rank (competition style on ranked; false when not on it), the
-- seat score as stored (false when none), the capacity from the details' "<updatedAtMs>
-- <capacity> <json>" (false when unknown), and the previous rank (competition style on
-- previous; 0 when not on it; false without previous).
local ranked, seat_board, details, previous = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local ids_from = 1
local count = #ARGV - ids_from + 1
local call = redis.call
local total = call('ZCARD', ranked)
local scores = call('ZMSCORE', ranked, unpack(ARGV, ids_from))
-- Only the concerts on the board are read further.
local on = {}
for j = 1, count do
  if scores[j] then on[#on + 1] = ARGV[ids_from + j - 1] end
end
local seats, shown, old = scores, {}, false
if #on > 0 then
  if ranked ~= seat_board then seats = call('ZMSCORE', seat_board, unpack(on)) end
  shown = call('HMGET', details, unpack(on))
  old = previous and call('ZMSCORE', previous, unpack(on))
end
-- A competition rank on `key` for each distinct score: one ZCOUNT each.
local function ranker(key)
  local known = {}
  return function(score)
    local rank = known[score]
    if not rank then
      rank = call('ZCOUNT', key, '-inf', '(' .. score) + 1
      known[score] = rank
    end
    return rank
  end
end
local rank_now = ranker(ranked)
local rank_before = previous and ranker(previous)
local out, k = {total}, 0
for j = 1, count do
  local n = #out
  if scores[j] then
    k = k + 1
    local capacity, value = false, shown[k]
    if value then
      local a = string.find(value, ' ', 1, true)
      local b = a and string.find(value, ' ', a + 1, true)
      if not b then error('malformed concert details of ' .. on[k]) end
      capacity = string.sub(value, a + 1, b - 1)
    end
    local before = false
    if old then
      before = old[k] and rank_before(old[k]) or 0
    end
    local seat = seats[ranked ~= seat_board and k or j]
    out[n + 1], out[n + 2], out[n + 3], out[n + 4] = rank_now(scores[j]), seat or false,
      capacity, before
  else
    out[n + 1], out[n + 2], out[n + 3], out[n + 4] = false, false, false, false
  end
end
return out
