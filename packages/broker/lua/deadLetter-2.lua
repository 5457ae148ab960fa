#!lua flags=allow-oom
--[[
  Moves a queue entry this consumer holds to the queue's dead-letter stream, with the reason, and
  acknowledges it, in one step. Fenced: only the consumer holding the entry may.

  Input:
    KEYS[1] lane (the stream the entry is in)
    KEYS[2] dead letters
    ARGV[1] consumer group
    ARGV[2] entry id
    ARGV[3] reason
    ARGV[4] the entry's fields (JSON)
    ARGV[5] now (ms; '' for Redis's clock)
    ARGV[6] task id, or ''
    ARGV[7] dead letters kept (approximate trim)
    ARGV[8] extra (JSON: lane, attempts, last error)
    ARGV[9] consumer

  Returns:
    1 moved; 0 the entry is not this consumer's (another worker holds it now)
]]
--- @include "redisNow"
--- @include "ownedBy"
--- @include "addDeadLetter"
local lane, deadLetters = KEYS[1], KEYS[2]
local group, entryId, reason, fields, now, taskId, maxLen, extra, consumer = unpack(ARGV, 1, 9)
if not ownedBy(lane, group, entryId, consumer) then
  return 0
end
addDeadLetter(deadLetters, maxLen, entryId, reason, fields, redisNow(now), taskId, extra)
redis.call('XACK', lane, group, entryId)
redis.call('XDEL', lane, entryId)
return 1
