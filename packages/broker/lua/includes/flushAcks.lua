-- Acknowledges and deletes the entries queueAck noted, one XACK and one XDEL per lane: a lane
-- holds only unfinished entries, so nothing pending is ever trimmed.
local function flushAcks(batch)
  for lane = 1, 3 do
    local ids = batch.acks[lane]
    if #ids > 0 then
      redis.call('XACK', batch.lanes[lane], batch.group, unpack(ids))
      redis.call('XDEL', batch.lanes[lane], unpack(ids))
    end
  end
end
