-- Close: an operator removes the queue's settings, which under QUEUE_CREATION=operator
-- removes the queue: token requests for it are 404 from then on. Its priority list, access list and access codes go too. Only an empty queue
-- (nobody waiting, no live session) closes: otherwise returns 0 and changes nothing. The
-- reaper retires it as any idle queue, and its meta goes then.
if waiting_count() > 0 or live_active_count() > 0 then return 0 end
redis.call('UNLINK', SETTINGS, PRIORITY, ACCESS, ACCESS_CODES)
return 1
