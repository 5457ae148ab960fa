-- Why one field of a task record cannot be trusted, or false when it can (see recordFault, which
-- says why records are checked). Cheap on purpose (it runs for every task): pattern checks only,
-- no JSON decoding. Fields without a rule pass.
local RECORD_INTEGERS = {
  attempt = true, createdAt = true, seq = true, maxDeliveries = true, deliveriesBase = true, retries = true,
  maxRetries = true, timeoutMs = true, startedAt = true, cancelRequestedAt = true, concurrencyLimit = true, parked = true,
  parkedAt = true, inbox = true,
}
-- Differences of two processes' clocks: negative when the submitter's clock ran ahead.
local RECORD_SIGNED = { waitMs = true }
local RECORD_STATUSES = { PENDING = true, RUNNING = true, RETRYING = true, WAITING = true, COMPLETED = true, FAILED = true,
  CANCELLED = true }
local function fieldFault(name, value)
  if RECORD_INTEGERS[name] then
    -- Digits only, and few enough that Lua's doubles hold them exactly.
    if #value > 15 or not string.find(value, '^%d+$') then
      return name .. ' is not a number'
    end
  elseif RECORD_SIGNED[name] then
    if #value > 16 or not string.find(value, '^%-?%d+$') then
      return name .. ' is not a number'
    end
  elseif name == 'concurrencyKey' then
    -- Part of a key name the scripts build: only what keys.concurrency accepts may pass.
    if #value > 128 or not string.find(value, '^[%w_%.:%-]+$') then
      return 'concurrencyKey is not a key name'
    end
  elseif name == 'status' then
    if not RECORD_STATUSES[value] then
      return 'status is unknown'
    end
  elseif name == 'taskId' then
    -- Status events splice it into JSON unescaped: only <queue>/<name> characters may pass.
    if #value > 193 or not string.find(value, '^[%w_%.:%-]+/[%w_%.:%-]+$') then
      return 'taskId is not a task id'
    end
  elseif name == 'log' then
    -- Comma-joined JSON objects: the next status event is appended after a comma.
    if value ~= '' and (string.sub(value, 1, 2) ~= '{"' or string.sub(value, -1) ~= '}') then
      return 'log is not a list of events'
    end
  end
  return false
end
