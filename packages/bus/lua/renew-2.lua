#!lua flags=allow-oom
--[[
  Renews the leases of the events a consumer is handling: XCLAIM ... JUSTID resets an event's idle
  time without counting a delivery, so a live consumer's slow event is never taken over. An event it
  no longer holds is reported, so its handling stops. Records the consumer's lease for reclaimers.

  Input:
    KEYS[1] the topic's stream
    KEYS[2] the group's leases (hash: consumer -> lease ms)
    ARGV[1] group
    ARGV[2] consumer
    ARGV[3] the consumer's lease (ms)
    ARGV[4..] event ids

  Returns:
    the ids of the events this consumer no longer holds
]]
--- @include "@flotilla/broker/renewHeld"
local stream, leases = KEYS[1], KEYS[2]
redis.call('HSET', leases, ARGV[2], ARGV[3])
return renewHeld(stream, ARGV[1], ARGV[2], { unpack(ARGV, 4) })
