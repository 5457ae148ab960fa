#!lua flags=allow-oom
--[[
  Cancels a running graph run: it ends CANCELLED (so no hand-off creates anything more) and the
  instances still open are returned, for the caller to cancel their tasks. Runs on a full Redis too:
  a cancel must not be refused for want of memory.

  Input:
    KEYS[1] run record
    KEYS[2] run nodes
    KEYS[3] run outputs
    KEYS[4] run joins
    KEYS[5] run events
    ARGV[1] now (ms; '' for Redis's clock)
    ARGV[2] reason
    ARGV[3] ttlMs: the run's keys expire this long after it ends
    ARGV[4] events kept (approximate)

  Returns:
    { outcome ('cancelled' | 'finished' | 'missing'), status, open instances (comma-separated) }
]]
--- @include "@flotilla/broker/redisNow"
--- @include "endRun"
--- @include "expireRun"
local reason, ttlMs, maxLen = unpack(ARGV, 2, 4)
local run = { key = KEYS[1], events = KEYS[5], maxLen = maxLen, now = redisNow(ARGV[1]), ttlMs = ttlMs, keys = KEYS }
local status = redis.call('HGET', KEYS[1], 'status')
if not status then
  return { 'missing', '', '' }
end
local open = {}
local states = redis.call('HGETALL', KEYS[2])
for i = 1, #states, 2 do
  if states[i + 1] == 'CREATED' then
    open[#open + 1] = states[i]
  end
end
if status ~= 'RUNNING' then
  return { 'finished', status, table.concat(open, ',') }
end
endRun(run, 'CANCELLED', cjson.encode({ message = reason, code = 'RUN_CANCELLED' }))
expireRun(run)
return { 'cancelled', 'CANCELLED', table.concat(open, ',') }
