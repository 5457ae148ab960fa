-- Shared by every script that writes a task's events: the stream (replay) and the channel (live)
-- always receive the same events, numbered by the task record's `seq` counter with no gap.

local TERMINAL = { COMPLETED = true, FAILED = true, CANCELLED = true }

-- bodies: JSON objects without "seq"; seq is spliced in as the first field.
-- Stream ids are 0-<seq>, so a reader can resume after any seq with XRANGE "(0-<seq>".
local function appendEvents(taskKey, streamKey, channel, bodies, maxLen, ttlMs)
  local n = #bodies
  if n == 0 then
    return tonumber(redis.call('HGET', taskKey, 'seq') or '0')
  end
  local last = redis.call('HINCRBY', taskKey, 'seq', n)
  local first = last - n + 1
  local out = {}
  for i = 1, n do
    local seq = first + i - 1
    local ev = '{"seq":' .. seq .. ',' .. string.sub(bodies[i], 2)
    redis.call('XADD', streamKey, 'MAXLEN', '~', maxLen, '0-' .. seq, 'e', ev)
    out[i] = ev
  end
  redis.call('PEXPIRE', streamKey, ttlMs)
  redis.call('PUBLISH', channel, '[' .. table.concat(out, ',') .. ']')
  return last
end

-- A status event built inside a script (the `status` member of the events union).
local function statusEvent(status, taskId, attempt, agent, now, extra)
  local ev = {
    type = 'status', status = string.lower(status), taskId = taskId,
    attempt = tonumber(attempt), ts = tonumber(now), agent = agent,
  }
  if extra then
    for k, v in pairs(extra) do ev[k] = v end
  end
  return cjson.encode(ev)
end
