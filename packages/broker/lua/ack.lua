-- Acknowledges queue entries this consumer still owns, and deletes them, so the stream holds only
-- entries not yet done: nothing pending is ever trimmed. An entry another consumer has taken over
-- (its lease lapsed here) is left alone: acking it would drop the new owner's claim.
-- KEYS: queue stream
-- ARGV: group, consumer, entryId...
--@include "owner"
local n = 0
for i = 3, #ARGV do
  if ownedBy(KEYS[1], ARGV[1], ARGV[i], ARGV[2]) then
    n = n + redis.call('XACK', KEYS[1], ARGV[1], ARGV[i])
    redis.call('XDEL', KEYS[1], ARGV[i])
  end
end
return n
