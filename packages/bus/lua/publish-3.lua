#!lua
--[[
  Publishes a batch of events to a topic's stream, each with its payload (`d`) and metadata (`m`)
  as the bus wrote them. An event with an idempotency key that was used within its window is not
  published again: its first id is returned. Every so often (the stream `slack` entries over its
  `maxLen`) the stream is trimmed, never past an entry a group has not settled (trimSettled);
  when unsettled entries hold the trim back, it is not tried again for a second (the hint key).

  Input:
    KEYS[1] the topic's stream
    KEYS[2] the topic's counters (hash)
    KEYS[3] the trim hint (string; set for a second while unsettled entries hold trimming back)
    ARGV[1] maxLen
    ARGV[2] slack: entries over maxLen before a trim is tried
    ARGV[3] the topic's key base (idempotency keys are `<base>idem:<key>`)
    ARGV[4] the stream's time to live (ms) after this publish ('0': none; reply topics)
    ARGV[5..] per event, four values: idempotency key ('' for none), its window (ms), payload JSON, metadata JSON

  Returns:
    the events' ids, in order (a repeated idempotency key: the first event's id)
]]
--- @include "trimSettled"
local stream, stats, hint = KEYS[1], KEYS[2], KEYS[3]
local maxLen, slack, base, ttlMs = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4])
local ids = {}
local added = 0
for i = 5, #ARGV, 4 do
  local idem, windowMs, payload, meta = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  local first = nil
  if idem ~= '' then
    first = redis.call('GET', base .. 'idem:' .. idem)
  end
  if first then
    ids[#ids + 1] = first
  else
    local id = redis.call('XADD', stream, '*', 'd', payload, 'm', meta)
    if idem ~= '' then
      redis.call('SET', base .. 'idem:' .. idem, id, 'PX', windowMs)
    end
    ids[#ids + 1] = id
    added = added + 1
  end
end
if added > 0 then
  redis.call('HINCRBY', stats, 'published', added)
end
if ttlMs > 0 then
  redis.call('PEXPIRE', stream, ttlMs)
end
if redis.call('XLEN', stream) > maxLen + slack and redis.call('EXISTS', hint) == 0 then
  if trimSettled(stream, maxLen) then
    redis.call('SET', hint, '1', 'PX', 1000)
  end
end
return ids
