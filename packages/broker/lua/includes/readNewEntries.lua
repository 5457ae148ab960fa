--- @include "entryName"
--- @include "noGroup"
-- Reads up to `count` new entries for the batch's consumer without blocking, lanes in `order`
-- (e.g. '1,2,3': high, normal, low). Replay-safe: the entries read are noted under `marker` (a key
-- unique to the call), so a resend after a lost reply gets the same entries back instead of new ones.
-- A lane without its consumer group (NOGROUP: Redis lost its data) is skipped and noted as
-- batch.noGroup (its key), so the entries read from the other lanes still start: a read that fails
-- part-way must leave no entry delivered and never started.
-- Returns a list of { lane, entryId, name, fields }; `name` is false for a malformed entry.
local CLAIM_MARKER_TTL_MS = 300000
local function readNewEntries(batch, count, order, marker)
  local out = {}
  local prior = redis.call('GET', marker)
  if prior then
    for lane, entryId, name in string.gmatch(prior, '(%d) ([^ ]+) ([^;]+);') do
      out[#out + 1] = { lane = tonumber(lane), entryId = entryId, name = name }
    end
    return out
  end
  local noted = {}
  local left = count
  for laneText in string.gmatch(order, '%d') do
    if left <= 0 then
      break
    end
    local lane = tonumber(laneText)
    local read = redis.pcall('XREADGROUP', 'GROUP', batch.group, batch.consumer, 'COUNT', left, 'STREAMS', batch.lanes[lane], '>')
    if noGroup(read) then
      batch.noGroup = batch.lanes[lane]
    elseif read then
      for _, entry in ipairs(read[1][2]) do
        local name = entryName(entry[2])
        out[#out + 1] = { lane = lane, entryId = entry[1], name = name, fields = entry[2] }
        if name then
          noted[#noted + 1] = laneText .. ' ' .. entry[1] .. ' ' .. name .. ';'
        end
        left = left - 1
      end
    end
  end
  if #noted > 0 then
    redis.call('SET', marker, table.concat(noted), 'PX', CLAIM_MARKER_TTL_MS)
  end
  return out
end
