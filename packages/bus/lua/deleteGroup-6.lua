#!lua flags=allow-oom
--[[
  Deletes a subscription: its consumer group with its pending events (so trimming is no longer held
  back by them), its retries, last errors, dead letters and consumers' leases, and its counters.

  Input:
    KEYS[1] the topic's stream
    KEYS[2] the group's retries (sorted set)
    KEYS[3] the group's last errors (hash)
    KEYS[4] the group's dead letters (stream)
    KEYS[5] the topic's counters (hash)
    KEYS[6] the group's leases (hash)
    ARGV[1] group

  Returns:
    1 when the group existed, else 0
]]
local stream, retries, errors, dead, stats, leases = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local group = ARGV[1]
local destroyed = 0
if redis.call('EXISTS', stream) == 1 then
  destroyed = redis.call('XGROUP', 'DESTROY', stream, group)
end
redis.call('DEL', retries, errors, dead, leases)
local fields = {}
for _, c in ipairs({ 'delivered', 'acked', 'retried', 'reclaimed', 'dead' }) do
  fields[#fields + 1] = group .. ':' .. c
end
redis.call('HDEL', stats, unpack(fields))
return destroyed
