-- Moves delayed tasks that are due into the queue stream, atomically; any live worker may run it.
-- KEYS: queue stream, delayed set
-- ARGV: now, max to move
-- Returns {moved, next due time or ''}.
local due = redis.call('ZRANGE', KEYS[2], '-inf', ARGV[1], 'BYSCORE', 'LIMIT', 0, ARGV[2])
for _, id in ipairs(due) do
  redis.call('XADD', KEYS[1], '*', 'task', id)
end
if #due > 0 then
  redis.call('ZREM', KEYS[2], unpack(due))
end
local nxt = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
return { #due, nxt[2] or '' }
