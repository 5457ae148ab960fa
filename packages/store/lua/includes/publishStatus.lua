-- Publishes the status events of the call on the queue's status channel: one message, a JSON
-- array, however many tasks the call touched.
local function publishStatus(batch, channel)
  if #batch.status > 0 then
    redis.call('SPUBLISH', channel, '[' .. table.concat(batch.status, ',') .. ']')
  end
end
