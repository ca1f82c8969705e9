-- Release after payment: ARGV[ARG] user, ARGV[ARG + 1] the payment's instant in ms.
-- Ends the buyer's live session if it began before the payment (with a little slack for
-- clock skew), so a late or repeated event never ends a later session of the same buyer.
-- The freed place is filled on the next promotion tick. Returns {released (0|1), ticket}.
local user, paid_at = ARGV[ARG], tonumber(ARGV[ARG + 1])
local CLOCK_SLACK_MS = 5000
local until_ms = redis.call('ZSCORE', ACTIVE, user)
local ticket, since = active_entry(user)
if not until_ms or not ticket or tonumber(until_ms) <= NOW or since > paid_at + CLOCK_SLACK_MS then
  return {0, 0}
end
end_session(user, 'paid')
return {1, ticket}
