-- Appends numbered events to a task's event stream and sends them to its live channel. `bodies`
-- are JSON objects without "seq", which is spliced in as their first member; the first gets
-- `firstSeq`. The batch is one stream entry, a JSON array, with id 0-<last seq>: a reader resumes
-- after any seq with XRANGE "(0-<seq>" and drops the earlier events of the first entry it gets. The
-- stream keeps about `maxLen` events (MINID trim) and expires `ttlMs` after its last event.
-- Returns the last seq. Numbers are made text with integer formatting (see @flotilla/broker/redisClock).
local function appendEventBatch(stream, channel, bodies, firstSeq, maxLen, ttlMs)
  local out = {}
  for i = 1, #bodies do
    out[i] = '{"seq":' .. string.format('%d', firstSeq + i - 1) .. ',' .. string.sub(bodies[i], 2)
  end
  local last = firstSeq + #bodies - 1
  local text = '[' .. table.concat(out, ',') .. ']'
  redis.call('XADD', stream, 'MINID', '~', '0-' .. string.format('%d', math.max(0, last - tonumber(maxLen))),
    '0-' .. string.format('%d', last), 'e', text)
  redis.call('PEXPIRE', stream, ttlMs)
  redis.call('SPUBLISH', channel, text)
  return last
end
