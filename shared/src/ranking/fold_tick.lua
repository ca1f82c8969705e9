-- The tick's fold: folds what the apply calls left in the fold queue, after boards.lua,
-- windows.lua, record.lua and fold.lua, and unlinks a payment record group in its last hour.
-- Keys (tick.rs FOLD names them too): DETAILS, the page cache PAGES (deleted when the call
-- folds anything) and the fold queue FOLD, then the watermark hash and the record index,
-- which the call reaches through the window templates and REC. Arguments: the dedupe window
-- in seconds, the window templates (windows.lua), where records live (REC: record.lua) and
-- the fold's budget of board writes.
-- Answers a tag and named fields: {'done', 'folded', n, 'rejected', n} when the queue is
-- empty, else {'more', 'folded', n, 'left', n, 'rejected', n}: the entries folded, those
-- left, and those set aside in REJECTED.
local TTL, WIN, REC = tonumber(ARGV[1]), cjson.decode(ARGV[2]), cjson.decode(ARGV[3])
local BUDGET = tonumber(ARGV[4])
local done = fold(BUDGET, WIN, TTL)
sweep_group(REC, NOW)
prune_indexes()
flush_expiries()
if done > 0 then forget_pages() end
local left, rejected = redis.call('LLEN', FOLD), redis.call('LLEN', REJECTED)
if left == 0 then return {'done', 'folded', done, 'rejected', rejected} end
return {'more', 'folded', done, 'left', left, 'rejected', rejected}
