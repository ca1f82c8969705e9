-- Release after payment. ARGV[ARG]: user; ARGV[ARG + 1]: the payment's completedAt in ms;
-- ARGV[ARG + 2]: the ticket the payment names, or 0; ARGV[ARG + 3]: how long the payment is
-- remembered, in seconds; ARGV[ARG + 4]: how far ahead of the server clock a payment may
-- be, in ms. The script's own key, after the prelude's, is this payment's release marker.
-- A payment releases at most once: its first delivery sets the marker, and a redelivery
-- finds it and releases nothing. The first delivery ends the buyer's live session only if
-- it is the one paid for: the ticket named, or else a session that began before the payment
-- by the server's clock (completedAt, never later than now, plus a little slack for clock
-- skew), so a late, repeated or future-dated event never ends a later session of the same
-- buyer. The freed place is filled on the next promotion tick. Returns {released (0|1),
-- ticket}.
local MARKER = KEYS[OWN_KEYS]
local user, paid_at = ARGV[ARG], tonumber(ARGV[ARG + 1])
local paid_ticket, remember, skew = tonumber(ARGV[ARG + 2]), tonumber(ARGV[ARG + 3]),
  tonumber(ARGV[ARG + 4])
local CLOCK_SLACK_MS = 5000
-- The rankings refuse such a payment; so does the release, and it remembers nothing.
if paid_at > NOW + skew then return {0, 0} end
if not redis.call('SET', MARKER, 1, 'NX', 'EX', remember) then return {0, 0} end
local until_ms = redis.call('ZSCORE', ACTIVE, user)
local ticket, since = active_entry(user)
if not until_ms or not ticket or tonumber(until_ms) <= NOW then return {0, 0} end
if paid_ticket > 0 then
  if ticket ~= paid_ticket then return {0, 0} end
elseif since > math.min(paid_at, NOW) + CLOCK_SLACK_MS then
  return {0, 0}
end
end_session(user, 'paid')
return {1, ticket}
