#!lua flags=allow-oom
--[[
  Settles events a group handled: acknowledged (they leave the group's pending list), the retry and
  error entries of those whose earlier delivery failed dropped (only they can have any), the group's
  `acked` counter raised by how many were still pending.

  Input:
    KEYS[1] the topic's stream
    KEYS[2] the group's retries (sorted set)
    KEYS[3] the group's last errors (hash)
    KEYS[4] the topic's counters (hash)
    ARGV[1] group
    ARGV[2] n: how many of the ids (the first n) had a delivery fail before
    ARGV[3..] event ids

  Returns:
    how many were still pending
]]
local stream, retries, errors, stats = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local group = ARGV[1]
local failed = tonumber(ARGV[2])
local ids = { unpack(ARGV, 3) }
local n = redis.call('XACK', stream, group, unpack(ids))
if failed > 0 then
  local before = { unpack(ids, 1, failed) }
  redis.call('ZREM', retries, unpack(before))
  redis.call('HDEL', errors, unpack(before))
end
if n > 0 then
  redis.call('HINCRBY', stats, group .. ':acked', n)
end
return n
