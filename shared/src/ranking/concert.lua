-- One concert on a board. KEYS[1]: board; ARGV[1]: concertId.
-- Returns {seats, rank}, or {} when the concert is not on the board.
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score then return {} end
return {-tonumber(score), redis.call('ZCOUNT', KEYS[1], '-inf', '(' .. score) + 1}
