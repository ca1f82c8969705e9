-- Movement: each row's rank in what a read compares with, the prelude of page.lua and
-- concerts.lua (compare.rs names the key and arguments they bind). `previous` is the key
-- compared with, or nil; `against` says what it is: 'bucket', the same calendar board one
-- bucket before (a sorted set), or 'snapshot', a live board's last snapshot (a hash,
-- snapshot.lua); `half` the trending half-life in ms a trending read ranks with, '' on any
-- other board.
-- previous_ranks(previous, against, half, ids, ranks) gives, for the j-th of `ids` (now at
-- competition rank ranks[j]), its rank before: a competition rank, 0 when it was not there
-- (new), nil when unknown; and the snapshot's time (ms, as stored), or nil.
-- On a bucket: one ZMSCORE, then one ZCOUNT per distinct score found. On a snapshot: one
-- HMGET. A snapshot knows its top '@k' rows and those tied with the last of them: a row
-- ranked below k now, or missing from a snapshot of a board that held more rows ('@full': it
-- was below them then), is unknown; missing from a snapshot of the whole board, it is new. A
-- snapshot without '@full' counts as full. A trending snapshot ranked with another
-- half-life than the read compares with nothing.
local function previous_ranks(previous, against, half, ids, ranks)
  local before = {}
  if not previous or #ids == 0 then return before, nil end
  if against == 'bucket' then
    local old, counted = redis.call('ZMSCORE', previous, unpack(ids)), {}
    for j = 1, #ids do
      local score = old[j]
      if score then
        counted[score] = counted[score] or redis.call('ZCOUNT', previous, '-inf', '(' .. score) + 1
        before[j] = counted[score]
      else
        before[j] = 0
      end
    end
    return before, nil
  end
  local got = redis.call('HMGET', previous, '@at', '@k', '@full', '@half', unpack(ids))
  local at, k, whole = got[1], tonumber(got[2]), got[3] == '0'
  if not (at and k) or (half ~= '' and got[4] ~= half) then return before, nil end
  for j = 1, #ids do
    if ranks[j] <= k then
      local rank = got[4 + j]
      if rank then
        before[j] = tonumber(rank)
      elseif whole then
        before[j] = 0
      end
    end
  end
  return before, at
end
