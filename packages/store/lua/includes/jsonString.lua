-- A JSON string literal; plain ids skip the encoder (this runs for every status event).
local function jsonString(text)
  if string.find(text, '^[%w_%.:%- /]*$') then
    return '"' .. text .. '"'
  end
  return cjson.encode(text)
end
