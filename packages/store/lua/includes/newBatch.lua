--- @include "@flotilla/broker/redisClock"
-- The state of one script call over a queue's tasks: what it replies, the entries to acknowledge,
-- the statistics to count and the status events to publish. finish() writes the last three once,
-- at the end, whatever the call touched. Includes keep no state of their own: it all lives here.
-- `lanes`: the queue's lane keys, high, normal, low (empty for a call that settles no entry).
-- readNewEntries sets `noGroup` to a lane it could not read: it has no consumer group.
-- `now`: the caller's fixed time (tests), or '' for Redis's clock (see @flotilla/broker/redisClock);
-- `nowText` is the same as text, for what is written or concatenated.
local function newBatch(lanes, group, consumer, now, taskBase, recordTtlMs)
  local clock, clockText = redisClock(now)
  return {
    lanes = lanes,
    group = group,
    consumer = consumer,
    now = clock,
    nowText = clockText,
    taskBase = taskBase,
    recordTtlMs = recordTtlMs,
    replies = {},
    acks = { {}, {}, {} },
    stats = {},
    status = {},
  }
end
