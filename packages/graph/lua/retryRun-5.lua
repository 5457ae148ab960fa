#!lua
--[[
  Resumes a FAILED or CANCELLED run from where it stopped: every instance that failed, was cancelled
  or was still open goes back to CREATED under the run's next try (its tasks are new ones, named
  with the try, so the old tasks' late ends are stale); every other instance keeps its outcome and
  output. The run is RUNNING again (the failures advance-5.lua noted are forgotten) and its keys
  lose their time to live.

  Input:
    KEYS[1] run record
    KEYS[2] run nodes
    KEYS[3] run outputs
    KEYS[4] run joins
    KEYS[5] run events
    ARGV[1] now (ms; '' for Redis's clock)
    ARGV[2] events kept (approximate)

  Returns:
    { 'retried', try, instances to create (comma-separated) }, or { 'refused', status } for a run
    that is RUNNING or SUCCEEDED, or { 'missing', '' }
]]
--- @include "@flotilla/broker/redisNow"
--- @include "runEvent"
local run = { events = KEYS[5], maxLen = ARGV[2], now = redisNow(ARGV[1]) }
local status = redis.call('HGET', KEYS[1], 'status')
if not status then
  return { 'missing', '' }
end
if status ~= 'FAILED' and status ~= 'CANCELLED' then
  return { 'refused', status }
end
local try = redis.call('HINCRBY', KEYS[1], 'tries', 1)
local again = {}
local states = redis.call('HGETALL', KEYS[2])
for i = 1, #states, 2 do
  local key, state = states[i], states[i + 1]
  if not string.find(key, '[>~]$') and (state == 'ERRORED' or state == 'CANCELLED' or state == 'CREATED') then
    again[#again + 1] = key
  end
end
for _, key in ipairs(again) do
  redis.call('HSET', KEYS[2], key, 'CREATED', key .. '~', try)
  redis.call('HDEL', KEYS[3], '!' .. key)
end
redis.call('HSET', KEYS[1], 'status', 'RUNNING', 'open', #again)
redis.call('HDEL', KEYS[1], 'endedAt', 'error', 'failures', 'failed')
for i = 1, 5 do
  redis.call('PERSIST', KEYS[i])
end
runEvent(run, 'run-retried', { 'try', try })
for _, key in ipairs(again) do
  runEvent(run, 'node-created', { 'node', key })
end
return { 'retried', try, table.concat(again, ',') }
