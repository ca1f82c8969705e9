-- Movement: each row's rank in what a read compares with, the prelude of page.lua and
-- concerts.lua (compare.rs names the key and arguments they bind). `previous` is the key
-- compared with, or nil; `against` says what it is: 'bucket', the same calendar board one
-- bucket before (a sorted set), or 'snapshot', a live board's last snapshot (a hash,
-- snapshot.lua); `half` the trending half-life in ms a trending read ranks with, '' on any
-- other board.
-- previous_ranks(previous, against, half, ids, ranks) gives, for the j-th of `ids` (now at
-- competition rank ranks[j]), its rank before: a competition rank, 0 when it was not there
-- (new), nil when unknown; and the snapshot's time (ms, as stored), or nil.
-- On a bucket: one ZMSCORE, then a ZCARD and one ZCOUNT per distinct score found. On a
-- snapshot: an HMGET of its facts, then one of the rows ranked within its k now. A snapshot
-- knows its top '@k' rows and those tied with the last of them: a row ranked below k now,
-- or missing from a snapshot of a board that held more rows ('@full': it was below them
-- then), is unknown; missing from a snapshot of the whole board, it is new. A snapshot
-- without '@full' counts as full. A trending snapshot ranked with another
-- half-life than the read compares with nothing.
local function previous_ranks(previous, against, half, ids, ranks)
  local before = {}
  if not previous or #ids == 0 then return before, nil end
  if against == 'bucket' then
    local old, counted = redis.call('ZMSCORE', previous, unpack(ids)), {}
    local total
    for j = 1, #ids do
      local score = old[j]
      if score then
        -- The rows at or past the score, as Redis gave it: no string built.
        total = total or redis.call('ZCARD', previous)
        counted[score] = counted[score] or total - redis.call('ZCOUNT', previous, score, '+inf') + 1
        before[j] = counted[score]
      else
        before[j] = 0
      end
    end
    return before, nil
  end
  local meta = redis.call('HMGET', previous, '@at', '@k', '@full', '@half')
  local at, k, whole = meta[1], tonumber(meta[2]), meta[3] == '0'
  if not (at and k) or (half ~= '' and meta[4] ~= half) then return before, nil end
  -- Only the rows ranked within k now are looked up: a snapshot of k rows is a listpack,
  -- which HMGET scans for each field asked.
  local asked, at_row = {}, {}
  for j = 1, #ids do
    if ranks[j] <= k then
      asked[#asked + 1] = ids[j]
      at_row[#asked] = j
    end
  end
  if #asked == 0 then return before, at end
  local got = redis.call('HMGET', previous, unpack(asked))
  for i, j in ipairs(at_row) do
    if got[i] then
      before[j] = tonumber(got[i])
    elseif whole then
      before[j] = 0
    end
  end
  return before, at
end
