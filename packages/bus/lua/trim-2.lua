#!lua flags=allow-oom
--[[
  Trims a topic's stream toward its maxLen without removing an entry a group has not settled (see
  includes/trimSettled.lua); run by subscribers' upkeep so a topic that stops being published to
  still shrinks once its groups catch up.

  Input:
    KEYS[1] the topic's stream
    KEYS[2] the trim hint (string; set for a second while unsettled entries hold trimming back)
    ARGV[1] maxLen

  Returns:
    the stream's length after
]]
--- @include "trimSettled"
local stream, hint = KEYS[1], KEYS[2]
if redis.call('EXISTS', stream) == 0 then
  return 0
end
if trimSettled(stream, tonumber(ARGV[1])) then
  redis.call('SET', hint, '1', 'PX', 1000)
end
return redis.call('XLEN', stream)
