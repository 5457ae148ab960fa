-- Records a notable delivery (retried, reclaimed, dead) on the topic's capped metrics stream.
local function noteDelivery(metrics, maxLen, kind, group, consumer, entryId, deliveries)
  redis.call('XADD', metrics, 'MAXLEN', '~', maxLen, '*', 'kind', kind, 'group', group, 'consumer', consumer, 'event', entryId, 'deliveries', deliveries)
end
