-- The tick: takes the buckets that have left each rolling window off its boards.
-- Concatenated after boards.lua (uncount, capacity_of, forget_pages). Keys (tick.rs ROLL names
-- them too): DETAILS and PAGES (boards.lua's), then WATERMARKS, the watermark hash.
-- Arguments: cfg, JSON {g, genre, windows, state_keep} as windows.lua describes; budget, the
-- most bucket fields taken off per call; steps, the most buckets looked at per call.
-- A bucket b has left a window of n buckets once the current bucket is b + n or later. The
-- watermark is the last bucket taken off; the next is taken off field by field (each
-- field '<concertId> <genre,genre>' holds the seats counted from that bucket), deleting
-- the fields done, and the watermark moves once it is empty.
-- Answers {'more', 'fields', n} when there is more to do now, else {'done', 'fields', n}: the
-- bucket fields taken off.
local WATERMARKS = KEYS[3]
local cfg = cjson.decode(ARGV[1])
local budget, steps = tonumber(ARGV[2]), tonumber(ARGV[3])
local clock = redis.call('TIME')
local now = tonumber(clock[1])
local now_ms = now * 1000 + math.floor(tonumber(clock[2]) / 1000)
local cur = math.floor(now_ms / cfg.g)
local processed, more = 0, 0

for _, w in ipairs(cfg.windows) do
  local oldest = cur - w.n
  local mark = tonumber(redis.call('HGET', WATERMARKS, w.name))
  local start = mark
  if not mark then
    -- No watermark: nothing was counted in the last state_keep, so nothing is older.
    mark = oldest
  end
  while mark < oldest do
    if budget <= 0 or steps <= 0 then
      more = 1
      break
    end
    steps = steps - 1
    local b = mark + 1
    local hash = w.hash .. b
    local rows = redis.call('HRANDFIELD', hash, budget, 'WITHVALUES')
    local fields = {}
    for i = 1, #rows, 2 do
      local concert, csv = string.match(rows[i], '^(%S+) (%S*)$')
      local seats = tonumber(rows[i + 1])
      if concert and seats and seats > 0 then
        local capacity = capacity_of(concert)
        uncount(w.board, concert, seats, capacity)
        for g in string.gmatch(csv, '[^,]+') do
          uncount(w.board .. cfg.genre .. g, concert, seats, capacity)
        end
      end
      fields[#fields + 1] = rows[i]
    end
    if #fields > 0 then redis.call('HDEL', hash, unpack(fields)) end
    processed = processed + #fields
    if #fields < budget then mark = b end
    budget = budget - #fields
  end
  if mark ~= start then redis.call('HSET', WATERMARKS, w.name, mark) end
end
redis.call('EXPIREAT', WATERMARKS, now + cfg.state_keep)
if processed > 0 then forget_pages() end
return {more == 1 and 'more' or 'done', 'fields', processed}
