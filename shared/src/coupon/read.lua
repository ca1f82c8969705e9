-- Read: the campaign (see campaign_reply). Writes nothing.
return campaign_reply()
