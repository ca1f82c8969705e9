-- The tick's fold: folds what the apply calls left in the fold queue, after boards.lua,
-- windows.lua and fold.lua. KEYS[1]: the details hash; KEYS[2]: the page cache, deleted when
-- the call folds anything; KEYS[3]: the fold queue; KEYS[4]: the watermark hash. ARGV[1]: the
-- dedupe window in seconds; ARGV[2]: the window templates (windows.lua); ARGV[3]: the fold's
-- budget of board writes.
-- Returns {entries folded, entries left, entries set aside in REJECTED}.
local done = fold(tonumber(ARGV[3]), cjson.decode(ARGV[2]), tonumber(ARGV[1]))
prune_indexes()
flush_expiries()
if done > 0 then forget_pages() end
return {done, redis.call('LLEN', FOLD), redis.call('LLEN', REJECTED)}
