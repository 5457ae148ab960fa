#!lua
--[[
  Publishes dead letters of a group again as new events of their topic (every group receives them:
  the event is new), with the payload and metadata they had, and removes them from the dead letters.

  Input:
    KEYS[1] the group's dead letters (stream)
    KEYS[2] the topic's stream
    KEYS[3] the topic's counters (hash)
    ARGV[1], ARGV[2..] dead-letter ids

  Returns:
    { { dead-letter id, new event id or false (not found, or not an event the bus wrote) }, ... }
]]
local dead, stream, stats = KEYS[1], KEYS[2], KEYS[3]
local out = {}
local added = 0
for _, id in ipairs(ARGV) do
  local entry = redis.call('XRANGE', dead, id, id)[1]
  local newId = false
  if entry then
    local f = {}
    for i = 1, #entry[2], 2 do
      f[entry[2][i]] = entry[2][i + 1]
    end
    if f['f:d'] then
      newId = redis.call('XADD', stream, '*', 'd', f['f:d'], 'm', f['f:m'] or '{}')
      added = added + 1
      redis.call('XDEL', dead, id)
    end
  end
  out[#out + 1] = { id, newId }
end
if added > 0 then
  redis.call('HINCRBY', stats, 'published', added)
end
return out
