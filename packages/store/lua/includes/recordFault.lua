-- Why a task record a script read cannot be trusted, or false when it can. A record may have been
-- written straight into Redis by a buggy or hostile producer: every script checks the fields it
-- reads with this before it writes anything, so a bad record is refused (or taken out of its
-- batch) whole instead of raising half-way through a call. `names`: the fields read, in order;
-- `values`: what a redis.pcall of HMGET gave for them (an error reply when the key is no hash).
-- Cheap on purpose (it runs for every task): pattern checks only, no JSON decoding.
local RECORD_INTEGERS = {
  attempt = true, createdAt = true, seq = true, maxDeliveries = true, deliveriesBase = true, retries = true,
  maxRetries = true, timeoutMs = true, startedAt = true, cancelRequestedAt = true, concurrencyLimit = true, parked = true,
  parkedAt = true,
}
-- Differences of two processes' clocks: negative when the submitter's clock ran ahead.
local RECORD_SIGNED = { waitMs = true }
local RECORD_STATUSES = { PENDING = true, RUNNING = true, RETRYING = true, WAITING = true, COMPLETED = true, FAILED = true,
  CANCELLED = true }
local function recordFault(names, values)
  if values.err then
    return 'the key is not a hash (' .. (string.match(values.err, '^%S+') or 'error') .. ')'
  end
  for i = 1, #names do
    local name, value = names[i], values[i]
    if RECORD_INTEGERS[name] then
      -- Digits only, and few enough that Lua's doubles hold them exactly.
      if value and (#value > 15 or not string.find(value, '^%d+$')) then
        return name .. ' is not a number'
      end
    elseif RECORD_SIGNED[name] then
      if value and (#value > 16 or not string.find(value, '^%-?%d+$')) then
        return name .. ' is not a number'
      end
    elseif name == 'concurrencyKey' then
      -- Part of a key name the scripts build: only what keys.concurrency accepts may pass.
      if value and (#value > 128 or not string.find(value, '^[%w_%.:%-]+$')) then
        return 'concurrencyKey is not a key name'
      end
    elseif name == 'status' then
      if value and not RECORD_STATUSES[value] then
        return 'status is unknown'
      end
    elseif name == 'taskId' then
      -- Status events splice it into JSON unescaped: only <queue>/<name> characters may pass.
      if not value then
        -- A completed task's record is packed (see packRecord): its taskId is in 'z' then.
        local packed = false
        for j = 1, #names do
          packed = packed or (names[j] == 'status' and values[j] == 'COMPLETED')
        end
        if not packed then
          return 'taskId is missing'
        end
      elseif #value > 193 or not string.find(value, '^[%w_%.:%-]+/[%w_%.:%-]+$') then
        return 'taskId is not a task id'
      end
    elseif name == 'log' then
      -- Comma-joined JSON objects: the next status event is appended after a comma.
      if value and value ~= '' and (string.sub(value, 1, 2) ~= '{"' or string.sub(value, -1) ~= '}') then
        return 'log is not a list of events'
      end
    end
  end
  return false
end
