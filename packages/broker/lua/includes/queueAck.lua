-- Notes an entry of `lane` (1 high, 2 normal, 3 low) to be acknowledged and deleted when the call
-- finishes: one XACK and one XDEL per lane however many entries (see flushAcks).
local function queueAck(batch, lane, entryId)
  if entryId ~= '' then
    local ids = batch.acks[lane]
    ids[#ids + 1] = entryId
  end
end
