-- What becomes of a task's event stream when the task ends (`streams`: { base, ttlMs, untilEnd }):
-- deleted (events "until-end"), or kept `ttlMs` from now. A small stream is also rewritten at its real
-- size: Redis gives each new stream node a listpack of stream-node-max-bytes (4 KB) up front, which a
-- task's few events never fill, and DUMP + RESTORE writes it again without that room (a no-op agent's
-- stream: 4.8 KB before, 1.1 KB after). A larger stream is left as it is: its last node's spare room is
-- small beside it, and copying it would cost more.
-- `published`: whether the task ever published an event of its own (the record's 'lastBatch', which
-- every publish writes, see reserveEventSeqs): status events live in the record's log, so a task that
-- published nothing has no stream and nothing is asked of Redis for it (most tasks of a plain executor).
local COMPACT_MAX_ENTRIES = 8
local function endStream(streams, name, published)
  if not published then
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
