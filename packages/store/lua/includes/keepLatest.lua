--- @include "isTerminal"
-- Retention by count: with `keep.count` above 0, a finished task's name joins its kind's set, scored
-- by when it ended, and the oldest beyond the count are deleted — record, event stream and index
-- entry — at most KEEP_TRIM_STEP per call, so a settle's cost stays bounded (a lowered count is
-- caught up over the next few settles). Names whose records expired by age leave the set too. A name
-- whose task runs again (requeued from the dead letters) is not deleted, only dropped from the set.
local KEEP_TRIM_STEP = 4
local function keepLatest(batch, keep, name)
  if keep.count <= 0 then
    return
  end
  redis.call('ZADD', keep.set, batch.now, name)
  redis.call('ZREMRANGEBYSCORE', keep.set, '-inf', batch.now - keep.ageMs)
  local over = redis.call('ZCARD', keep.set) - keep.count
  if over <= 0 then
    return
  end
  local oldest = redis.call('ZPOPMIN', keep.set, math.min(over, KEEP_TRIM_STEP))
  for i = 1, #oldest, 2 do
    local old = oldest[i]
    local record = batch.taskBase .. old
    local status = redis.pcall('HGET', record, 'status')
    if type(status) == 'string' and isTerminal(status) then
      redis.call('DEL', record, batch.streams.base .. old)
      redis.call('ZREM', batch.keep.index, old)
    end
  end
end
