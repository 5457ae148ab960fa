-- Workers end attempts in batches: each outcome (COMPLETED, FAILED, CANCELLED or RETRYING) is
-- written to its task record and its queue entry settled, all in one step.
-- Fenced: only the holder of the current attempt of a RUNNING task may write, so a late or stale
-- writer can never overwrite a terminal status nor resurrect a finished task. Once the record
-- accepted the outcome, the entry is acknowledged (completed, cancelled), moved to the delayed set
-- (retrying) or to the dead-letter stream (failed); the entries of a batch are acknowledged and
-- deleted with one XACK and one XDEL per lane.
-- Then, with a claim count, it claims and starts that many new entries for the freed slots (as
-- claim.lua does), so a busy worker makes one round trip per batch: finish these, start the next.
-- KEYS: lane high, lane normal, lane low, delayed high, delayed normal, delayed low, dead letters,
--       claim marker (unique to this call), stats bucket
-- ARGV: group, consumer, now, taskBase, recordTtlMs, statusChannel, deadLetterMaxLen, claim count,
--       lane order, then per outcome
--       (WIDTH fields): lane, entryId|'' (no entry to settle), name, attempt, status, result|'', error|'',
--       retryAt|'', release (1: a RETRYING that hands the task back unfinished and uses up no retry),
--       dead-letter reason|'', usage (JSON token totals of the attempt)|''
-- A RETRYING attempt of a task whose cancel was requested ends it CANCELLED instead.
-- Returns {outcomes, started}: per outcome {'ok', status, deadLettered (0|1)} or
-- {'rejected', reason, currentStatus}; per claimed entry a reply as in includes/start.lua.
--@include "start"
--@include "owner"
local WIDTH = 11
local PRIORITY = { 'high', 'normal', 'low' }
local group, consumer, now, base, recordTtl = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4], ARGV[5]
local settled = {}

local function owned(lane, entryId)
  return entryId ~= '' and ownedBy(KEYS[lane], group, entryId, consumer)
end

-- Settles the entry of an accepted outcome.
local function settleEntry(lane, entryId, name, taskId, target, attempt, errText, retryAt, reason)
  if entryId == '' then
    return 0
  end
  if target == 'RETRYING' then
    -- Only while the entry is still ours: a worker that took it over runs the task from it.
    if ownedBy(KEYS[lane], group, entryId, consumer) then
      redis.call('ZADD', KEYS[3 + lane], retryAt, name)
      ack(lane, entryId)
    end
    return 0
  end
  if target == 'FAILED' then
    redis.call('XADD', KEYS[7], 'MAXLEN', '~', ARGV[7], '*', 'entryId', entryId, 'reason', reason,
      'fields', cjson.encode({ task = name }), 'at', now, 'taskId', taskId, 'extra',
      '{"attempts":' .. attempt .. ',"lastError":' .. (errText ~= '' and errText or 'null') ..
      ',"priority":"' .. PRIORITY[lane] .. '"}')
    ack(lane, entryId)
    return 1
  end
  ack(lane, entryId)
  return 0
end

for i = 10, #ARGV, WIDTH do
  local lane, entryId, name, attempt, target = tonumber(ARGV[i]), ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4]
  local result, errText, retryAt, release, reason = ARGV[i + 5], ARGV[i + 6], ARGV[i + 7], ARGV[i + 8], ARGV[i + 9]
  local usage = ARGV[i + 10]
  local key = base .. name
  local h = redis.call('HMGET', key, 'status', 'attempt', 'startedAt', 'cancelRequestedAt', 'cancelReason', 'taskId',
    'agent', 'seq', 'log', 'retries')
  local current = h[1]
  if not current then
    if owned(lane, entryId) then ack(lane, entryId) end
    settled[#settled + 1] = { 'rejected', 'missing', '' }
  elseif current == target and h[2] == attempt then
    -- The same outcome of the same attempt again: a resend after a lost reply.
    local dead = 0
    if owned(lane, entryId) then
      dead = settleEntry(lane, entryId, name, h[6], target, attempt, errText, retryAt, reason)
    end
    settled[#settled + 1] = { 'ok', current, dead }
  elseif TERMINAL[current] then
    if owned(lane, entryId) then ack(lane, entryId) end
    settled[#settled + 1] = { 'rejected', 'terminal', current }
  elseif current ~= 'RUNNING' or h[2] ~= attempt then
    settled[#settled + 1] = { 'rejected', 'stale', current }
  elseif target == 'RETRYING' and h[4] then
    redis.call('HSET', key, 'durationMs', now - tonumber(h[3] or now))
    cancelWaiting(key, h[6], attempt, h[7], h[5] or 'cancelled', now, h[8], h[9], recordTtl)
    if entryId ~= '' then ack(lane, entryId) end
    countStat('cancelled')
    settled[#settled + 1] = { 'ok', 'CANCELLED', 0 }
  else
    local f = { 'status', target, 'durationMs', now - tonumber(h[3] or now) }
    if result ~= '' then f[#f + 1] = 'result'; f[#f + 1] = result end
    if usage ~= '' then f[#f + 1] = 'usage'; f[#f + 1] = usage end
    local extra
    if errText ~= '' then
      f[#f + 1] = 'error'; f[#f + 1] = errText
      extra = ',"error":' .. errText
    end
    if target == 'RETRYING' then
      if release ~= '1' then
        f[#f + 1] = 'retries'; f[#f + 1] = tonumber(h[10] or '0') + 1
      end
      f[#f + 1] = 'retryAt'; f[#f + 1] = retryAt
    else
      f[#f + 1] = 'completedAt'; f[#f + 1] = now
    end
    hsetAll(key, f, statusEvent(target, h[6], attempt, h[7], now, h[8], h[9], extra, result))
    if TERMINAL[target] then
      redis.call('PEXPIRE', key, recordTtl)
    end
    local dead = settleEntry(lane, entryId, name, h[6], target, attempt, errText, retryAt, reason)
    countStat(string.lower(target))
    settled[#settled + 1] = { 'ok', target, dead }
  end
end
local claimCount = tonumber(ARGV[8])
if claimCount > 0 then
  claimNew({ consumer = consumer, now = now, base = base, recordTtlMs = recordTtl }, KEYS, group, claimCount, ARGV[9], KEYS[8])
end
flushAcks(KEYS, group)
flushStats(KEYS[9])
publishStatus(ARGV[6])
return { settled, replies }
