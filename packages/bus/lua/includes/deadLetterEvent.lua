--- @include "noteDelivery"
-- Moves one pending event of a group to the group's dead-letter stream, with the reason, the
-- deliveries made and the last error, and settles it for the group (XACK, its retry and error
-- entries gone). The event's own fields are copied as they are, so a malformed one can be read.
local function deadLetterEvent(k, group, consumer, entryId, reason, deliveries, err, deadMaxLen, metricsMaxLen, now)
  local fields = { 'event', entryId, 'group', group, 'reason', reason, 'attempts', deliveries, 'error', err, 'failedAt', now }
  local entry = redis.call('XRANGE', k.stream, entryId, entryId)[1]
  if entry then
    local f = entry[2]
    for i = 1, #f, 2 do
      fields[#fields + 1] = 'f:' .. f[i]
      fields[#fields + 1] = f[i + 1]
    end
  end
  redis.call('XADD', k.dead, 'MAXLEN', '~', deadMaxLen, '*', unpack(fields))
  redis.call('XACK', k.stream, group, entryId)
  redis.call('ZREM', k.retries, entryId)
  redis.call('HDEL', k.errors, entryId)
  redis.call('HINCRBY', k.stats, group .. ':dead', 1)
  noteDelivery(k.metrics, metricsMaxLen, 'dead', group, consumer, entryId, deliveries)
end
