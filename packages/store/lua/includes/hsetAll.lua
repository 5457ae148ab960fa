-- One HSET of `fields` followed by `more` (both flat lists of field, value).
local function hsetAll(key, fields, more)
  for i = 1, #more do
    fields[#fields + 1] = more[i]
  end
  redis.call('HSET', key, unpack(fields))
end
