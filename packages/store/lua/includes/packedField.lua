-- One field of a packed record (see packRecord, whose short names it takes: `member`), as stored
-- text, or nil. `packed`: the record's 'z' (nil or false: not packed). Decodes the whole JSON: for
-- rare paths only.
local function packedField(packed, member)
  if type(packed) ~= 'string' then
    return nil
  end
  local ok, fields = pcall(cjson.decode, packed)
  if not ok or type(fields) ~= 'table' then
    return nil
  end
  local value = fields[member]
  if type(value) == 'number' then
    -- Whole numbers are stored bare (see packRecord).
    return string.format('%.0f', value)
  end
  return type(value) == 'string' and value or nil
end
