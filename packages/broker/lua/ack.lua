-- Acknowledges a queue entry and deletes it, so the stream holds only entries not yet done:
-- nothing that is still pending is ever trimmed, and the stream never grows past the backlog.
-- KEYS: queue stream
-- ARGV: group, entryId...
local n = 0
for i = 2, #ARGV do
  n = n + redis.call('XACK', KEYS[1], ARGV[1], ARGV[i])
  redis.call('XDEL', KEYS[1], ARGV[i])
end
return n
