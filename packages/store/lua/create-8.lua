#!lua
--[[
  Creates a batch of a queue's tasks (PENDING records) and enqueues each: an entry in its priority
  lane, or, with a start time, a member of the lane's delayed set. One call, one slot.
  A task with a submitId is checked first: an existing record of that name is a duplicate id
  ('0'), unless it holds this submitId (a resend after a lost reply: '1', nothing written again).
  A batch with useMarker is checked as a whole the same way, through its marker key.

  Input:
    KEYS[1..3] the queue's lanes: high, normal, low
    KEYS[4..6] their delayed sets: high, normal, low
    KEYS[7] task index
    KEYS[8] submit marker (unique to the batch)
    ARGV[1] queue
    ARGV[2] task key base (a task's key is base .. name)
    ARGV[3] event stream key base
    ARGV[4] createdAt: now (ms; '' for Redis's clock)
    ARGV[5] trim the index to this many names (0: no trim)
    ARGV[6] useMarker (0 | 1)
    ARGV[7] consumer group
    ARGV[8..] per task (18): name, agent, payload, detailed, maxRetries, timeoutMs, metadata,
      maxDeliveries, backoff, runIn, lane, submitId, trace, handoff, concurrencyKey, concurrencyLimit,
      signature, inputPreview
      (runIn: ms from now to its start, on Redis's clock; lane: 1 high, 2 normal, 3 low; '' for an optional field left out; trace: W3C carrier JSON;
      handoff: '1' for a graph node task, whose end is noted in the queue's hand-off set, see
      includes/noteHandoff.lua; concurrencyKey, concurrencyLimit: at most that many of the queue's
      tasks with that key run at once, see includes/takeConcurrencySlot.lua; signature: the creator's
      HMAC of the task, checked by workers that verify signatures, see @flotilla/store's signing.ts;
      inputPreview: the first characters of its input, for task lists, see input-preview.ts)

  Returns:
    a string of '1' (created) and '0' (name taken), one per task, then '+' when the queue's lanes
    were missing and the call made them, with their consumer group (Redis lost its data, or the
    queue is new): the caller registers the queue again
]]
--- @include "@flotilla/broker/redisNow"
--- @include "@flotilla/broker/enqueueEntry"
--- @include "@flotilla/broker/delayEntry"
--- @include "packedField"
local SUBMIT_MARKER_TTL_MS = 600000
local WIDTH = 18
local lanes = { KEYS[1], KEYS[2], KEYS[3] }
local delayed = { KEYS[4], KEYS[5], KEYS[6] }
local index, marker = KEYS[7], KEYS[8]
local queue, taskBase, streamBase, now, trimTo, useMarker, group = unpack(ARGV, 1, 7)
now = redisNow(now)
if useMarker == '1' then
  local done = redis.call('GET', marker)
  if done then
    return done
  end
end
-- Adds field, value to a record's fields unless the value was left out ('').
local function optional(fields, field, value)
  if value ~= '' then
    fields[#fields + 1] = field
    fields[#fields + 1] = value
  end
end
local created = {}
local lanesMade = false
for i = 8, #ARGV, WIDTH do
  local name, agent, payload, detailed, maxRetries, timeoutMs, metadata, maxDeliveries, backoff, runIn, lane,
    submitId, trace, handoff, concurrencyKey, concurrencyLimit, signature, inputPreview = unpack(ARGV, i, i + WIDTH - 1)
  local runAt = runIn ~= '' and now + (tonumber(runIn) or 0) or ''
  local key = taskBase .. name
  local outcome = '1'
  if submitId ~= '' and redis.call('EXISTS', key) == 1 then
    -- A key that is no hash (written by something else) holds the name too: taken, and the rest
    -- of the batch is still created.
    -- A completed task's record is packed: its submitId is then in 'z' (see includes/packRecord.lua).
    local stored = redis.pcall('HMGET', key, 'submitId', 'z')
    local held = not stored.err and (stored[1] or packedField(stored[2], 's'))
    outcome = held == submitId and '1' or '0'
  else
    if submitId ~= '' and handoff ~= '1' then
      -- A caller-chosen name may be reused once its record expired: its old events must not replay.
      -- A graph node task's name carries its run's id and try, never reused: nothing to drop.
      redis.call('DEL', streamBase .. name)
    end
    local fields = { 'taskId', queue .. '/' .. name, 'queue', queue, 'agent', agent, 'payload', payload,
      'createdAt', now, 'status', 'PENDING', 'maxRetries', maxRetries, 'maxDeliveries', maxDeliveries }
    lane = tonumber(lane)
    if detailed == '1' then optional(fields, 'detailed', '1') end
    optional(fields, 'timeoutMs', timeoutMs)
    optional(fields, 'metadata', metadata)
    optional(fields, 'backoff', backoff)
    optional(fields, 'runAt', runAt)
    if lane ~= 2 then optional(fields, 'priority', lane == 1 and 'high' or 'low') end
    optional(fields, 'submitId', submitId)
    optional(fields, 'trace', trace)
    optional(fields, 'handoff', handoff)
    optional(fields, 'concurrencyKey', concurrencyKey)
    optional(fields, 'concurrencyLimit', concurrencyLimit)
    optional(fields, 'signature', signature)
    optional(fields, 'inputPreview', inputPreview)
    redis.call('HSET', key, unpack(fields))
    if runAt ~= '' then
      delayEntry(delayed[lane], runAt, name)
    else
      local _, made = enqueueEntry(lanes, lane, group, name)
      lanesMade = lanesMade or made
    end
    redis.call('ZADD', index, now, name)
  end
  created[#created + 1] = outcome
end
if trimTo ~= '0' then
  redis.call('ZREMRANGEBYRANK', index, 0, -tonumber(trimTo) - 1)
end
local reply = table.concat(created) .. (lanesMade and '+' or '')
if useMarker == '1' then
  redis.call('SET', marker, reply, 'PX', SUBMIT_MARKER_TTL_MS)
end
return reply
