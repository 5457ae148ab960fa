--- @include "@flotilla/broker/enqueueEntry"
--- @include "concurrencySet"
-- A task of concurrency key `ckey` stopped running (it ended, or waits for a retry): it leaves the
-- key's running set (see takeConcurrencySlot), and the key's first parked task (see startEntry) goes back to its lane, behind
-- what is queued there, to take the freed slot when a worker claims it. So a full key costs nothing
-- while it waits: no entry in a lane, no polling. Parked tasks that ended meanwhile (cancelled) are
-- dropped on the way. A no-op for a task not in the set. Needs batch.lanes, batch.group, batch.taskBase.
local function releaseConcurrencySlot(batch, ckey, name)
  local set = concurrencySet(batch, ckey)
  if redis.call('SREM', set, name) == 0 then
    return
  end
  local waiting = set .. ':waiting'
  while true do
    local next = redis.call('LPOP', waiting)
    if not next then
      return
    end
    local key = batch.taskBase .. next
    local status, lane = unpack(redis.call('HMGET', key, 'status', 'parked'))
    if lane and (status == 'PENDING' or status == 'RETRYING') then
      redis.call('HDEL', key, 'parked')
      enqueueEntry(batch.lanes, tonumber(lane), batch.group, next)
      return
    end
  end
end
