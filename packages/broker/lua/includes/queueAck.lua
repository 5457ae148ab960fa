-- Notes an entry of `lane` (1 high, 2 normal, 3 low) to be acknowledged and deleted when the call
-- finishes: one XACK per lane however many entries, then trimmed or deleted (see flushAcks).
local function queueAck(batch, lane, entryId)
  if entryId ~= '' then
    local ids = batch.acks[lane]
    ids[#ids + 1] = entryId
  end
end
