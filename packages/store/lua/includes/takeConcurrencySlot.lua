--- @include "concurrencySet"
-- A task of concurrency key `ckey` may start while fewer than `limit` of the key's tasks run: it
-- joins the key's running set (see concurrencySet). Replay-safe: a member stays one.
-- When the set is full, members whose record no longer says RUNNING (one expired or deleted while it
-- ran) are dropped first, so a release that never came cannot hold a slot for good; that costs one
-- HGET per member, and only when the set is full. Returns true when the task holds a slot. Needs
-- batch.lanes and batch.taskBase.
local function takeConcurrencySlot(batch, ckey, name, limit)
  local set = concurrencySet(batch, ckey)
  if redis.call('SISMEMBER', set, name) == 1 then
    return true
  end
  if redis.call('SCARD', set) >= limit then
    for _, member in ipairs(redis.call('SMEMBERS', set)) do
      local status = redis.pcall('HGET', batch.taskBase .. member, 'status')
      if status ~= 'RUNNING' then
        redis.call('SREM', set, member)
      end
    end
    if redis.call('SCARD', set) >= limit then
      return false
    end
  end
  redis.call('SADD', set, name)
  return true
end
