#!lua flags=allow-oom
--[[
  Forgets a group's consumers that hold no events and have been silent for `minIdleMs`: workers
  that used those names are gone, and without this the group keeps one consumer per worker id ever
  used. The check and the delete are one step, so a consumer that took an event in between is never
  deleted with it (DELCONSUMER drops a consumer's pending events).

  Input:
    KEYS[1] the topic's stream
    KEYS[2] the group's leases (hash: consumer -> lease ms); a forgotten consumer's field goes too
    ARGV[1] group
    ARGV[2] min idle (ms)
    ARGV[3] a consumer to keep (the caller)

  Returns:
    the names of the consumers forgotten
]]
--- @include "@flotilla/broker/forgetIdleConsumers"
return forgetIdleConsumers(KEYS[1], KEYS[2], ARGV[1], tonumber(ARGV[2]), ARGV[3])
