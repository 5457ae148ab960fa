-- Claims up to `count` new entries of a queue for this consumer and starts their tasks, in one
-- step: lanes are read in the given order without blocking (strict priority unless the fairness
-- rule reorders them), so the worker makes one round trip for a whole batch.
-- KEYS: lane high, lane normal, lane low, claim marker (unique to this call)
-- ARGV: group, consumer, now, taskBase, recordTtlMs, statusChannel, count, lane order (e.g. '1,2,3')
-- Replay-safe: the entries a call claimed are noted under its marker, so a resend after a lost
-- reply starts those again (getting their attempts back) instead of claiming new ones.
-- Returns one reply per entry (see includes/start.lua), plus {'malformed', lane, entryId, field, value, ...}
-- for an entry that is not { task = <name> }.
--@include "start"
local ctx = { consumer = ARGV[2], now = tonumber(ARGV[3]), base = ARGV[4], recordTtlMs = ARGV[5] }
local prior = redis.call('GET', KEYS[4])
if prior then
  for lane, entryId, name in string.gmatch(prior, '(%d) ([^ ]+) ([^;]+);') do
    startEntry(ctx, tonumber(lane), entryId, name, false)
  end
  flushAcks(KEYS, ARGV[1])
  publishStatus(ARGV[6])
  return replies
end
local claimed = {}
local left = tonumber(ARGV[7])
for laneText in string.gmatch(ARGV[8], '%d') do
  if left <= 0 then
    break
  end
  local lane = tonumber(laneText)
  local read = redis.call('XREADGROUP', 'GROUP', ARGV[1], ARGV[2], 'COUNT', left, 'STREAMS', KEYS[lane], '>')
  if read then
    for _, entry in ipairs(read[1][2]) do
      local name = entryName(entry[2])
      if name then
        claimed[#claimed + 1] = lane .. ' ' .. entry[1] .. ' ' .. name .. ';'
        startEntry(ctx, lane, entry[1], name, false)
      else
        local reply = { 'malformed', lane, entry[1] }
        if type(entry[2]) == 'table' then
          for _, v in ipairs(entry[2]) do reply[#reply + 1] = v end
        end
        replies[#replies + 1] = reply
      end
      left = left - 1
    end
  end
end
if #claimed > 0 then
  redis.call('SET', KEYS[4], table.concat(claimed), 'PX', 300000)
end
flushAcks(KEYS, ARGV[1])
publishStatus(ARGV[6])
return replies
