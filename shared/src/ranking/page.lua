-- A page of a board with each row's seats and details, in one call.
-- KEYS[1]: the board ranked by (a seat or a rate board); KEYS[2]: the seat board;
-- KEYS[3]: the details hash.
-- ARGV: offset, limit (a page); or 'around', concertId, n (the concert and the n rows
-- either side of it).
-- Returns {total, rows, focus}. rows: {concertId, rank, seats, details}; rank competition
-- style (1, 2, 2, 4) on KEYS[1]; seats from KEYS[2] (nil when absent); details the hash's
-- "<updatedAtMs> <capacity> <json>" (nil when unknown). focus: the concert's row (1-based)
-- around it; 0 on a page, and around a concert not on the board (rows then empty).
local ranked, seat_board, details = KEYS[1], KEYS[2], KEYS[3]
local first, last, focus
if ARGV[1] == 'around' then
  local at = redis.call('ZRANK', ranked, ARGV[2])
  if not at then return {redis.call('ZCARD', ranked), {}, 0} end
  first = math.max(0, at - tonumber(ARGV[3]))
  last = at + tonumber(ARGV[3])
  focus = at - first + 1
else
  first = tonumber(ARGV[1])
  last = first + tonumber(ARGV[2]) - 1
  focus = 0
end
local range = redis.call('ZRANGE', ranked, first, last, 'WITHSCORES')
local rows, ids, previous, rank = {}, {}, nil, 0
for i = 1, #range, 2 do
  local score, position = range[i + 1], first + (i - 1) / 2
  -- A score unlike the one before starts at its own position; only a page's first row
  -- may share its score with rows before the page, so only it asks ZCOUNT.
  if score ~= previous then
    if previous or position == 0 then
      rank = position + 1
    else
      rank = redis.call('ZCOUNT', ranked, '-inf', '(' .. score) + 1
    end
    previous = score
  end
  ids[#ids + 1] = range[i]
  rows[#rows + 1] = {range[i], rank, -tonumber(score)}
end
if #ids > 0 then
  local shown = redis.call('HMGET', details, unpack(ids))
  local seats = ranked ~= seat_board and redis.call('ZMSCORE', seat_board, unpack(ids))
  for j, row in ipairs(rows) do
    if seats then row[3] = seats[j] and -tonumber(seats[j]) end
    row[4] = shown[j]
  end
end
return {redis.call('ZCARD', ranked), rows, focus}
