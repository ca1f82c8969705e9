-- Many concerts' standing on one board, in one call (concerts.rs CONCERTS names the keys and
-- arguments); after compare.lua (previous_ranks) and cache.lua (keep_read). Keys: ranked,
-- the board ranked by (a seat or a rate board); seat_board; details, the details hash; cache,
-- the page cache; previous, what movement compares with (compare.lua; given where movement
-- is shown). Arguments: against and half (compare.lua); set, a name of the ids asked (the
-- same for the same ids); room, the most fields the page cache may hold for this read to
-- keep its answer; then ids…, the concert ids, sorted and each given once.
-- An answer kept in the page cache, under the field 'concerts <ranked> <against> <half>
-- <set>', is the answer: one HGET. Otherwise bulk reads (ZCARD and ZMSCORE on ranked; for
-- the concerts on it, ZMSCORE on the seat board for a rate read and HMGET of the details),
-- one ZCOUNT per distinct score found, for the competition ranks, then previous_ranks for
-- the concerts on the board: so the call grows with the ids asked, never with the board. The
-- answer is kept when the board is not empty and the cache holds fewer than `room` fields,
-- so ids made up by the million fill it only up to `room` answers of a few KB each.
-- Returns JSON, [total, at, [[rank, score, capacity, previous], ...]], a row per id in order:
-- rank (competition style on ranked; null when not on it), the seat score as stored (a
-- string; null when none), the capacity from the details' "<updatedAtMs> <capacity>
-- <json>" (null when unknown), and the previous rank (0 when it was not there; null when
-- unknown or without previous); at, the time (ms) of the snapshot compared with, or null.
local ranked, seat_board, details, cache = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local previous = KEYS[5]
local against, half, set, room = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local ids_from = 5
local field = 'concerts ' .. ranked .. ' ' .. against .. ' ' .. half .. ' ' .. set
local call = redis.call
local kept = call('HGET', cache, field)
if kept then return kept end
local count = #ARGV - ids_from + 1
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
-- A competition rank for each distinct score: one ZCOUNT each, of the rows at or past it
-- (the score as Redis gave it, with no string built).
local known, ranks = {}, {}
for j = 1, count do
  local score = scores[j]
  if score then
    local rank = known[score]
    if not rank then
      rank = total - call('ZCOUNT', ranked, score, '+inf') + 1
      known[score] = rank
    end
    ranks[#ranks + 1] = rank
  end
end
local before, taken_at = previous_ranks(previous, against, half, on, ranks)
local rows, k = {}, 0
for j = 1, count do
  if scores[j] then
    k = k + 1
    local capacity, value = 'null', shown[k]
    if value then
      local a = string.find(value, ' ', 1, true)
      local b = a and string.find(value, ' ', a + 1, true)
      if not b then error('malformed concert details of ' .. on[k]) end
      capacity = string.sub(value, a + 1, b - 1)
    end
    local seat = seats[ranked ~= seat_board and k or j]
    rows[j] = '[' .. ranks[k] .. ',' .. (seat and '"' .. seat .. '"' or 'null') .. ',' ..
      capacity .. ',' .. (before[k] or 'null') .. ']'
  else
    rows[j] = '[null,null,null,null]'
  end
end
local answer = '[' .. total .. ',' .. (taken_at or 'null') .. ',[' .. table.concat(rows, ',') ..
  ']]'
if total > 0 and call('HLEN', cache) < room then keep_read(cache, field, answer, seat_board) end
return answer
