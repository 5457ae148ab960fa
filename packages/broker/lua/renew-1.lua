#!lua flags=allow-oom
--[[
  Renews the leases of the entries this consumer holds: XCLAIM ... JUSTID resets an entry's idle
  time without counting a delivery. An entry it no longer holds is left alone and reported, so
  its run stops.

  Input:
    KEYS[1] lane
    ARGV[1] consumer group
    ARGV[2] consumer
    ARGV[3..] entry ids

  Returns:
    the ids of the entries this consumer no longer holds
]]
--- @include "renewHeld"
return renewHeld(KEYS[1], ARGV[1], ARGV[2], { unpack(ARGV, 3) })
