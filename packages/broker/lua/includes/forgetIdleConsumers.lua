-- Forgets a group's consumers that hold no entries and have been silent for `minIdle` ms (but
-- `keep`, the caller), and their fields in the `leases` hash (consumer -> lease ms). The check and
-- the delete are one step, so a consumer that took an entry in between is never deleted with it
-- (DELCONSUMER drops a consumer's pending entries). A stream or group that is gone forgets nothing.
local function forgetIdleConsumers(stream, leases, group, minIdle, keep)
  local consumers = redis.pcall('XINFO', 'CONSUMERS', stream, group)
  if type(consumers) == 'table' and consumers.err then
    return {}
  end
  local forgotten = {}
  for _, info in ipairs(consumers) do
    local c = {}
    for i = 1, #info, 2 do
      c[info[i]] = info[i + 1]
    end
    if c.name ~= keep and c.pending == 0 and c.idle >= minIdle then
      redis.call('XGROUP', 'DELCONSUMER', stream, group, c.name)
      forgotten[#forgotten + 1] = c.name
    end
  end
  if #forgotten > 0 then
    redis.call('HDEL', leases, unpack(forgotten))
  end
  return forgotten
end
