#!lua flags=allow-oom
--[[
  Forgets the consumers of a lane that hold no entries and have been silent for `minIdleMs`: the
  workers that used those ids are gone (a restarted worker comes back under a new id), and without
  this the group keeps one consumer per worker id ever used. The check and the delete are one step,
  so a consumer that took an entry in between is never deleted with it (DELCONSUMER drops a
  consumer's pending entries). A live worker forgotten while idle is made again by its next read.

  Input:
    KEYS[1] lane
    KEYS[2] the queue's leases (hash: consumer -> lease ms); a forgotten consumer's field goes too
    ARGV[1] consumer group
    ARGV[2] min idle (ms)
    ARGV[3] a consumer to keep (the caller)

  Returns:
    the names of the consumers forgotten
]]
--- @include "forgetIdleConsumers"
return forgetIdleConsumers(KEYS[1], KEYS[2], ARGV[1], tonumber(ARGV[2]), ARGV[3])
