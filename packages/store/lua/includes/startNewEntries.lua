--- @include "@flotilla/broker/readNewEntries"
--- @include "startEntry"
-- Claims up to `count` new entries for the batch's consumer (lanes in `order`, replay-safe through
-- `marker`: see readNewEntries) and starts their tasks. A malformed entry is replied as
-- { 'malformed', lane, entryId, field, value, ... } for the worker to dead-letter.
local function startNewEntries(batch, count, order, marker)
  for _, entry in ipairs(readNewEntries(batch, count, order, marker)) do
    if entry.name then
      startEntry(batch, entry.lane, entry.entryId, entry.name, false)
    else
      local reply = { 'malformed', entry.lane, entry.entryId }
      if type(entry.fields) == 'table' then
        for _, v in ipairs(entry.fields) do
          reply[#reply + 1] = v
        end
      end
      batch.replies[#batch.replies + 1] = reply
    end
  end
end
