-- What becomes of a task's event stream when the task ends (`streams`: { base, ttlMs, untilEnd }):
-- deleted (events "until-end"), or kept `ttlMs` from now. A small stream is also rewritten at its real
-- size: Redis gives each new stream node a listpack of stream-node-max-bytes (4 KB) up front, which a
-- task's few events never fill, and DUMP + RESTORE writes it again without that room (a no-op agent's
-- stream: 4.8 KB before, 1.1 KB after). A larger stream is left as it is: its last node's spare room is
-- small beside it, and copying it would cost more.
-- `seq` and `log`: the record's event counter and status log as read before this outcome. Status
-- events live in the log and every other event in the stream, so a task whose counter holds no more
-- events than its log has no stream: nothing is asked of Redis for it (most tasks of a plain executor).
local COMPACT_MAX_ENTRIES = 8
-- The start of a status event: '{"seq":N,"status":...' (the log's copies) or '{"seq":N,"type":"status"...'
-- (full ones, written before the log left out the type). A tool call's arguments (in a waiting
-- event) would need an object starting with such a key to be miscounted.
local STATUS_MARK = '{"seq":%d+,"[st][ty][ap]'
local function endStream(streams, name, seq, log)
  local statuses, from = 0, 1
  while log do
    local _, last = string.find(log, STATUS_MARK, from)
    if not last then
      break
    end
    statuses = statuses + 1
    from = last + 1
  end
  if tonumber(seq or '0') <= statuses then
    return
  end
  local stream = streams.base .. name
  if streams.untilEnd then
    redis.call('DEL', stream)
    return
  end
  -- pcall: a key of another type under the stream's name (written by something else) is left alone.
  local entries = redis.pcall('XLEN', stream)
  if type(entries) ~= 'number' or entries == 0 then
    return
  end
  if entries <= COMPACT_MAX_ENTRIES then
    redis.call('RESTORE', stream, streams.ttlMs, redis.call('DUMP', stream), 'REPLACE')
  else
    redis.call('PEXPIRE', stream, streams.ttlMs)
  end
end
