--- @include "@flotilla/broker/flushAcks"
--- @include "flushStats"
--- @include "publishStatus"
-- Ends a call: acknowledges the settled entries, writes the statistics and publishes the status
-- events it gathered, each once.
local function finish(batch, statsKey, statusChannel)
  flushAcks(batch)
  flushStats(batch, statsKey)
  publishStatus(batch, statusChannel)
end
