-- Starting claimed entries, shared by claim.lua and start.lua. Every start is a delivery and gets
-- a new attempt number, which fences out whoever ran the task before.
-- Entries that must not run are settled here: a finished task's entry, a second entry of a task
-- running under a live lease and a task whose cancel was stored while it waited are acknowledged
-- in one XACK + XDEL per lane at the end. A missing record, the delivery limit and a malformed
-- entry go back to the worker, which dead-letters the entry with the reason.
-- Replay-safe: a resent start of the same entry by the same worker gets its attempt back.
--@include "cancel"
--@include "stats"

local replies = {}
local acks = { {}, {}, {} }

local function ack(lane, entryId)
  if entryId ~= '' then
    local list = acks[lane]
    list[#list + 1] = entryId
  end
end

local function flushAcks(lanes, group)
  for i = 1, 3 do
    if #acks[i] > 0 then
      redis.call('XACK', lanes[i], group, unpack(acks[i]))
      redis.call('XDEL', lanes[i], unpack(acks[i]))
    end
  end
end

-- A queue entry's fields are exactly { 'task', <name> }.
local function entryName(fields)
  if type(fields) ~= 'table' or #fields ~= 2 or fields[1] ~= 'task' then
    return nil
  end
  local name = fields[2]
  if #name > 128 or not string.match(name, '^[%w_%.:%-]+$') then
    return nil
  end
  return name
end

-- ctx: consumer, now, base (task key prefix), recordTtlMs
local function startEntry(ctx, lane, entryId, name, reclaimed)
  local key = ctx.base .. name
  local h = redis.call('HMGET', key, 'status', 'attempt', 'cancelRequestedAt', 'createdAt', 'agent', 'payload',
    'cancelReason', 'timeoutMs', 'detailed', 'waitMs', 'metadata', 'maxDeliveries', 'workerId', 'error', 'retries',
    'maxRetries', 'backoff', 'entryId', 'seq', 'log', 'deliveriesBase', 'taskId', 'trace')
  local status = h[1]
  if not status then
    replies[#replies + 1] = { 'missing', lane, entryId, name }
    return
  end
  if TERMINAL[status] then
    ack(lane, entryId)
    replies[#replies + 1] = { 'skip', lane, entryId, name, 'terminal', status }
    return
  end
  local function run(attempt)
    replies[#replies + 1] = { 'run', lane, entryId, name, attempt, h[6], h[8] or '', h[9] or '0', h[11] or '{}', h[5],
      h[15] or '0', h[16] or '0', h[17] or '', ctx.now - tonumber(h[4] or ctx.now), h[23] or '' }
  end
  if status == 'RUNNING' and not reclaimed then
    if h[13] == ctx.consumer and h[18] == entryId then
      run(tonumber(h[2]))
    else
      -- A second entry for a task that is running under a live lease.
      ack(lane, entryId)
      replies[#replies + 1] = { 'skip', lane, entryId, name, 'running', status }
    end
    return
  end
  local now = ctx.now
  local attempts = tonumber(h[2] or '0')
  if h[3] then
    -- Cancel was stored while it waited (or its worker died): end it here, never run it.
    cancelWaiting(key, h[22], attempts, h[5], h[7] or 'cancelled', now, h[19], h[20], ctx.recordTtlMs)
    ack(lane, entryId)
    replies[#replies + 1] = { 'skip', lane, entryId, name, 'cancelled', 'CANCELLED' }
    return
  end
  local maxDeliveries = tonumber(h[12] or '0')
  if maxDeliveries > 0 and attempts - tonumber(h[21] or '0') >= maxDeliveries then
    local errText = cjson.encode({ message = 'gave up after ' .. attempts .. ' deliveries (maxDeliveries ' ..
      maxDeliveries .. ')', code = 'DELIVERY_LIMIT' })
    hsetAll(key, { 'status', 'FAILED', 'completedAt', now, 'error', errText },
      statusEvent('FAILED', h[22], attempts, h[5], now, h[19], h[20], ',"error":' .. errText))
    redis.call('PEXPIRE', key, ctx.recordTtlMs)
    countStat('failed')
    replies[#replies + 1] = { 'dead', lane, entryId, name, attempts, h[14] or '' }
    return
  end
  local attempt = attempts + 1
  local f = { 'status', 'RUNNING', 'attempt', attempt, 'workerId', ctx.consumer, 'startedAt', now, 'entryId', entryId }
  if not h[10] then
    f[#f + 1] = 'waitMs'
    f[#f + 1] = now - tonumber(h[4])
    countWait(now - tonumber(h[4]))
  end
  local extra = ',"workerId":' .. jsonString(ctx.consumer)
  if status == 'RUNNING' then
    extra = extra .. ',"takenOverFrom":' .. jsonString(h[13] or '')
  end
  hsetAll(key, f, statusEvent('RUNNING', h[22], attempt, h[5], now, h[19], h[20], extra))
  run(attempt)
end

-- Claims up to `count` new entries with XREADGROUP, lanes in `order` (e.g. '1,2,3'), and starts
-- them. Replay-safe: the claimed entries are noted under `marker` (a key unique to the call), so a
-- resend after a lost reply starts those again (getting their attempts back) instead of claiming
-- new ones. Malformed entries come back as {'malformed', lane, entryId, field, value, ...}.
local function claimNew(ctx, lanes, group, count, order, marker)
  local prior = redis.call('GET', marker)
  if prior then
    for lane, entryId, name in string.gmatch(prior, '(%d) ([^ ]+) ([^;]+);') do
      startEntry(ctx, tonumber(lane), entryId, name, false)
    end
    return
  end
  local claimed = {}
  local left = count
  for laneText in string.gmatch(order, '%d') do
    if left <= 0 then
      break
    end
    local lane = tonumber(laneText)
    local read = redis.call('XREADGROUP', 'GROUP', group, ctx.consumer, 'COUNT', left, 'STREAMS', lanes[lane], '>')
    if read then
      for _, entry in ipairs(read[1][2]) do
        local name = entryName(entry[2])
        if name then
          claimed[#claimed + 1] = lane .. ' ' .. entry[1] .. ' ' .. name .. ';'
          startEntry(ctx, lane, entry[1], name, false)
        else
          local reply = { 'malformed', lane, entry[1] }
          if type(entry[2]) == 'table' then
            for _, v in ipairs(entry[2]) do reply[#reply + 1] = v end
          end
          replies[#replies + 1] = reply
        end
        left = left - 1
      end
    end
  end
  if #claimed > 0 then
    redis.call('SET', marker, table.concat(claimed), 'PX', 300000)
  end
end
