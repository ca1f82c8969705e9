-- Read: the campaign, {'campaign', ...}, or where it is not ({'elsewhere', ...},
-- {'unknown'}): campaign_reply in common.lua. Writes nothing.
return campaign_reply()
