-- Makes a lane's consumer group (and the lane) unless it has one: at id 0, so entries added before
-- it was made are read too. A group that exists already is left as it is.
local function makeGroup(lane, group)
  local made = redis.pcall('XGROUP', 'CREATE', lane, group, '0', 'MKSTREAM')
  if type(made) == 'table' and made.err and string.sub(made.err, 1, 10) ~= 'BUSYGROUP ' then
    error(made)
  end
end
