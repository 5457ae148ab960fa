#!lua flags=allow-oom
--[[
  Records a failed delivery of an event the consumer holds. With deliveries left and a retryable
  error, the event waits in the group's retries until it is due (it stays pending: no other
  consumer takes it before, and the reclaimer delivers it again then). Otherwise — its deliveries
  used up (`maxRetries` + 1), or a reason given (unrecoverable, malformed) — it goes to the group's
  dead letters (deadLetterEvent). An event the consumer no longer holds (taken over) is left alone.

  Input:
    KEYS[1] the topic's stream
    KEYS[2] the group's retries (sorted set: event id -> due at, ms)
    KEYS[3] the group's last errors (hash)
    KEYS[4] the group's dead letters (stream)
    KEYS[5] the topic's counters (hash)
    KEYS[6] the topic's metrics (stream)
    ARGV[1] group
    ARGV[2] consumer
    ARGV[3] event id
    ARGV[4] deliveries allowed (maxRetries + 1)
    ARGV[5] due at (ms) for a retry
    ARGV[6] error (JSON)
    ARGV[7] reason to dead-letter at once ('' for none)
    ARGV[8] dead letters' maxLen
    ARGV[9] metrics' maxLen
    ARGV[10] now (ms)

  Returns:
    { 'retry' | 'dead' | 'lost', deliveries so far }
]]
--- @include "deadLetterEvent"
--- @include "noteDelivery"
--- @include "@flotilla/broker/noGroup"
local k = { stream = KEYS[1], retries = KEYS[2], errors = KEYS[3], dead = KEYS[4], stats = KEYS[5], metrics = KEYS[6] }
local group, consumer, id = ARGV[1], ARGV[2], ARGV[3]
local allowed, dueAt, err, reason = tonumber(ARGV[4]), ARGV[5], ARGV[6], ARGV[7]
local deadMaxLen, metricsMaxLen, now = ARGV[8], ARGV[9], ARGV[10]
local pending = redis.pcall('XPENDING', k.stream, group, id, id, 1)
if noGroup(pending) or #pending == 0 or pending[1][2] ~= consumer then
  return { 'lost', 0 }
end
local deliveries = pending[1][4]
if reason == '' and deliveries >= allowed then
  reason = 'RETRIES_EXHAUSTED'
end
if reason ~= '' then
  deadLetterEvent(k, group, consumer, id, reason, deliveries, err, deadMaxLen, metricsMaxLen, now)
  return { 'dead', deliveries }
end
redis.call('ZADD', k.retries, dueAt, id)
redis.call('HSET', k.errors, id, err)
redis.call('HINCRBY', k.stats, group .. ':retried', 1)
noteDelivery(k.metrics, metricsMaxLen, 'retried', group, consumer, id, deliveries)
return { 'retry', deliveries }
