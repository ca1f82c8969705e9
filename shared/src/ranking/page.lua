-- A page of a board with each row's seats, details and previous rank, in one call; after
-- compare.lua (previous_ranks) and cache.lua (keep_read).
-- Keys (read.rs PAGE names them too): ranked, the board ranked by (a seat or a rate board);
-- seat_board; details, the details hash; cache, the page cache; previous, what movement
-- compares with (compare.lua; given where movement is shown). Arguments: mode, 'page' or
-- 'around'; target, a page's offset or the concertId to read around; count, a page's limit or
-- the rows either side of that concert; keep, '1' for the pages worth keeping in the cache,
-- else '0'; against and half, what previous is and the trending half-life (compare.lua).
-- A page is kept in the page cache (cache.lua) under the field '<ranked> <offset> <limit>
-- <against> <half>', so a page served from it is the page the boards give now, the previous
-- bucket's late payments included. A miss renders the page and keeps it when the board is
-- not empty. The cache holds at most one page per board, order, limit and comparison
-- up to read.rs's CACHED_LIMIT (about 1 KB each), so keeping a page even when Redis is full
-- (the script runs under allow-oom, as reads must) adds little.
-- A row's previous rank as compare.lua gives it: a rank, 0 (new), or nil (false in a kept
-- page: null); `at`, the snapshot's time, or nil.
-- Returns a page to keep as JSON, [total, focus, [row, ...], at], a row being [concertId,
-- rank, score, capacity, [title, venue, startsAt], previous]: only what a row shows, as a
-- kept page is handed to Lua and out again on every read, and Redis hashes every byte of a
-- string it hands Lua. Any other read returns a flat array: total, focus, at, then per row
-- concertId, rank, score, details and previous rank, each value as Redis holds it (nothing
-- is copied into a new string). rank: competition style (1, 2, 2, 4) on ranked; score: the
-- concert's score on the seat board as stored (a string), null when absent; capacity and
-- details from the details hash's "<updatedAtMs> <capacity> <json>", null when unknown.
-- focus: the concert's row (1-based) around it; 0 on a page, and around a concert not on the
-- board (no rows then). A concertId needs no JSON escaping (letters, digits, '.', '_', ':',
-- '-'; ids.rs).
local ranked, seat_board, details, cache = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local previous = KEYS[5]
local mode, target, count, keep = ARGV[1], ARGV[2], ARGV[3], ARGV[4] == '1'
local against, half = ARGV[5], ARGV[6]
local field
if keep then
  field = ranked .. ' ' .. target .. ' ' .. count .. ' ' .. against .. ' ' .. half
  local kept = redis.call('HGET', cache, field)
  if kept then return kept end
end
local first, last, focus
if mode == 'around' then
  local at = redis.call('ZRANK', ranked, target)
  if not at then return {redis.call('ZCARD', ranked), 0, false} end
  first = math.max(0, at - tonumber(count))
  last = at + tonumber(count)
  focus = at - first + 1
else
  first = tonumber(target)
  last = first + tonumber(count) - 1
  focus = 0
end
local range = redis.call('ZRANGE', ranked, first, last, 'WITHSCORES')
local ids, ranks, scores, last_score, rank = {}, {}, {}, nil, 0
for i = 1, #range, 2 do
  local score, position = range[i + 1], first + (i - 1) / 2
  -- A score unlike the one before starts at its own position; only a page's first row
  -- may share its score with rows before the page, so only it asks ZCOUNT.
  if score ~= last_score then
    if last_score or position == 0 then
      rank = position + 1
    else
      rank = redis.call('ZCOUNT', ranked, '-inf', '(' .. score) + 1
    end
    last_score = score
  end
  ids[#ids + 1] = range[i]
  ranks[#ranks + 1] = rank
  scores[#scores + 1] = score
end
local total = redis.call('ZCARD', ranked)
local shown = #ids > 0 and redis.call('HMGET', details, unpack(ids)) or {}
if #ids > 0 and ranked ~= seat_board then
  scores = redis.call('ZMSCORE', seat_board, unpack(ids))
end
local before, taken_at = previous_ranks(previous, against, half, ids, ranks)
if not field then
  local flat = {total, focus, taken_at or false}
  for j, id in ipairs(ids) do
    local n = #flat
    flat[n + 1], flat[n + 2], flat[n + 3], flat[n + 4], flat[n + 5] = id, ranks[j],
      scores[j] or false, shown[j] or false, before[j] or false
  end
  return flat
end
-- A kept row's [title, venue, startsAt] from a details value, by decoding its JSON.
local function shown_decoded(json)
  local d, null = cjson.decode(json), cjson.null
  return cjson.encode({d.title or null, d.venue or null, d.startsAt or null})
end
-- The JSON string token after `key` ('"title":"', say) in a value with no backslash, or nil.
local function token(value, key)
  local _, e = string.find(value, key, 1, true)
  local close = e and string.find(value, '"', e + 1, true)
  return close and string.sub(value, e, close)
end
-- The same, far cheaper, for a value with no backslash: then no string in it holds a quote,
-- so '"title":' can only be a key (the details JSON nests no object), and each string value
-- is spliced as it is. Plain finds only: a Lua pattern tries every position in Lua's own
-- matcher. nil when that does not find title and startsAt.
local function shown_fast(value)
  if string.find(value, '\\', 1, true) then return nil end
  local title, starts_at = token(value, '"title":"'), token(value, '"startsAt":"')
  if not (title and starts_at) then return nil end
  return '[' .. title .. ',' .. (token(value, '"venue":"') or 'null') .. ',' .. starts_at .. ']'
end
local out = {}
for j, id in ipairs(ids) do
  local value, capacity, kept = shown[j], 'null', 'null'
  if value then
    -- Plain finds: cheaper than a pattern over the whole value.
    local a = string.find(value, ' ', 1, true)
    local b = a and string.find(value, ' ', a + 1, true)
    if not b then error('malformed concert details of ' .. id) end
    capacity = string.sub(value, a + 1, b - 1)
    kept = shown_fast(value) or shown_decoded(string.sub(value, b + 1))
  end
  out[j] = '["' .. id .. '",' .. ranks[j] .. ',' ..
    (scores[j] and '"' .. scores[j] .. '"' or 'null') .. ',' .. capacity .. ',' .. kept .. ',' ..
    (before[j] or 'null') .. ']'
end
local page = '[' .. total .. ',' .. focus .. ',[' .. table.concat(out, ',') .. '],' ..
  (taken_at or 'null') .. ']'
if total > 0 then keep_read(cache, field, page, seat_board) end
return page
