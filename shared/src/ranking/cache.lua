-- The page cache, a prelude of page.lua and concerts.lua (keys.rs page_cache_key): a hash of
-- rendered reads, each under a field that names what it answers. Every script call that
-- writes boards, details or snapshots deletes it (boards.lua's forget_pages), so a kept read
-- is the read the boards give now.
-- keep_read(cache, field, value, seat_board) keeps a read. The hash ends CACHE_SECONDS after its
-- first read, and never after seat_board, the board the read shows (a rate board ends with
-- its seat board).
local CACHE_SECONDS = 300
local function keep_read(cache, field, value, seat_board)
  redis.call('HSET', cache, field, value)
  redis.call('EXPIRE', cache, CACHE_SECONDS, 'NX')
  local ends = redis.call('PEXPIRETIME', seat_board)
  if ends > 0 then redis.call('PEXPIREAT', cache, ends, 'LT') end
end
