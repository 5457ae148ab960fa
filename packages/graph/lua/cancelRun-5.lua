#!lua flags=allow-oom
--[[
  Cancels a running graph run: it ends CANCELLED (so no hand-off creates anything more) and the
  instances still open are returned with the try of their tasks, read in the same step: the caller
  then ends each one's task (or closes its name, when its task is yet to be created: closeTask-1.lua)
  and records the ends. A run that had ended returns its open instances too, so a cancel cut short
  by a crash is finished by calling it again. Runs on a full Redis too: a cancel must not be refused
  for want of memory.

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
    { outcome ('cancelled' | 'finished' | 'missing'), status, open instances (comma-separated), the
    try of each one's task (comma-separated, in the same order; 0 before any retry) }
]]
--- @include "@flotilla/broker/redisNow"
--- @include "endRun"
--- @include "expireRun"
local reason, ttlMs, maxLen = unpack(ARGV, 2, 4)
local run = { key = KEYS[1], events = KEYS[5], maxLen = maxLen, now = redisNow(ARGV[1]), ttlMs = ttlMs, keys = KEYS }
local status = redis.call('HGET', KEYS[1], 'status')
if not status then
  return { 'missing', '', '', '' }
end
local open, tries = {}, {}
local states = redis.call('HGETALL', KEYS[2])
local tryOf = {}
for i = 1, #states, 2 do
  local field, value = states[i], states[i + 1]
  if value == 'CREATED' then
    open[#open + 1] = field
  elseif string.sub(field, -1) == '~' then
    tryOf[string.sub(field, 1, -2)] = value
  end
end
for i, key in ipairs(open) do
  tries[i] = tryOf[key] or '0'
end
local outcome = 'finished'
if status == 'RUNNING' then
  endRun(run, 'CANCELLED', cjson.encode({ message = reason, code = 'RUN_CANCELLED' }))
  expireRun(run)
  outcome, status = 'cancelled', 'CANCELLED'
end
return { outcome, status, table.concat(open, ','), table.concat(tries, ',') }
