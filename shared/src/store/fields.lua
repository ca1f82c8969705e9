-- Writing a hash's fields, a helper any script may begin with (store::FIELDS_LUA).

-- Sets each field of `changed` (a table of field to value) in hash `key`; a field whose value
-- is '' is deleted instead.
local function write_fields(key, changed)
  for field, value in pairs(changed) do
    if value == '' then
      redis.call('HDEL', key, field)
    else
      redis.call('HSET', key, field, value)
    end
  end
end
