-- The task name a queue entry holds, or false when the entry is malformed: its fields must be
-- exactly { 'task', <name> }, the name made of letters, digits and _ . : - (at most 128).
local function entryName(fields)
  if type(fields) ~= 'table' or #fields ~= 2 or fields[1] ~= 'task' then
    return false
  end
  local name = fields[2]
  if #name > 128 or not string.match(name, '^[%w_%.:%-]+$') then
    return false
  end
  return name
end
