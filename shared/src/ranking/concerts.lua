-- Many concerts' standing on one board, in one call (concerts.rs CONCERTS names the keys and
-- arguments); after compare.lua (previous_ranks). Keys: ranked, the board ranked by (a seat
-- or a rate board); seat_board; details, the details hash; previous, what movement compares
-- with (compare.lua; given where movement is shown). Arguments: against and half
-- (compare.lua), then ids…, the concert ids, sorted and each given once.
-- Bulk reads (ZCARD and ZMSCORE on ranked; for the concerts on it, ZMSCORE on the seat board
-- for a rate read and HMGET of the details), one ZCOUNT per distinct score found, for the
-- competition ranks, then previous_ranks for the concerts on the board: so the call grows
-- with the ids asked, never with the board.
-- Returns total, the snapshot's time (false unless compared with one), then per id: rank
-- (competition style on ranked; false when not on it), the seat score as stored (false when
-- none), the capacity from the details' "<updatedAtMs> <capacity> <json>" (false when
-- unknown), and the previous rank (0 when it was not there; false when unknown or without
-- previous).
local ranked, seat_board, details, previous = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local against, half = ARGV[1], ARGV[2]
local ids_from = 3
local count = #ARGV - ids_from + 1
local call = redis.call
local total = call('ZCARD', ranked)
local scores = call('ZMSCORE', ranked, unpack(ARGV, ids_from))
-- Only the concerts on the board are read further.
local on = {}
for j = 1, count do
  if scores[j] then on[#on + 1] = ARGV[ids_from + j - 1] end
end
local seats, shown = scores, {}
if #on > 0 then
  if ranked ~= seat_board then seats = call('ZMSCORE', seat_board, unpack(on)) end
  shown = call('HMGET', details, unpack(on))
end
-- A competition rank for each distinct score: one ZCOUNT each.
local known, ranks = {}, {}
for j = 1, count do
  local score = scores[j]
  if score then
    local rank = known[score]
    if not rank then
      rank = call('ZCOUNT', ranked, '-inf', '(' .. score) + 1
      known[score] = rank
    end
    ranks[#ranks + 1] = rank
  end
end
local before, taken_at = previous_ranks(previous, against, half, on, ranks)
local out, k = {total, taken_at or false}, 0
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
    local seat = seats[ranked ~= seat_board and k or j]
    out[n + 1], out[n + 2], out[n + 3], out[n + 4] = ranks[k], seat or false, capacity,
      before[k] or false
  else
    out[n + 1], out[n + 2], out[n + 3], out[n + 4] = false, false, false, false
  end
end
return out
