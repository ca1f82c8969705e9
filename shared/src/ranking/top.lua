-- A page of a board. KEYS[1]: board; ARGV: offset, limit.
-- Returns {total, {{concertId, seats, rank}, ...}}; ranks are competition style (1, 2, 2, 4).
local key, offset, limit = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2])
local rows = redis.call('ZRANGE', key, offset, offset + limit - 1, 'WITHSCORES')
local items, previous, rank = {}, nil, 0
for i = 1, #rows, 2 do
  local score = rows[i + 1]
  if score ~= previous then
    rank = redis.call('ZCOUNT', key, '-inf', '(' .. score) + 1
    previous = score
  end
  items[#items + 1] = {rows[i], -tonumber(score), rank}
end
return {redis.call('ZCARD', key), items}
