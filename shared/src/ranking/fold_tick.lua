-- The tick's fold: folds what the apply calls left in the fold queue, after boards.lua,
-- windows.lua and fold.lua. Keys (tick.rs FOLD names them too): DETAILS, the page cache PAGES
-- (deleted when the call folds anything) and the fold queue FOLD, then the watermark hash,
-- which the fold reaches through the window templates. Arguments: the dedupe window in
-- seconds, the window templates (windows.lua) and the fold's budget of board writes.
-- Returns {entries folded, entries left, entries set aside in REJECTED}.
local TTL, WIN, BUDGET = tonumber(ARGV[1]), cjson.decode(ARGV[2]), tonumber(ARGV[3])
local done = fold(BUDGET, WIN, TTL)
prune_indexes()
flush_expiries()
if done > 0 then forget_pages() end
return {done, redis.call('LLEN', FOLD), redis.call('LLEN', REJECTED)}
