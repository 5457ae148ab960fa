#!lua
--[[
  Creates a schedule, or replaces the definition and task template of the one with that id: its
  counters, its last fired tick and task and its creation time stay. The next tick was computed
  by the caller from `now` (Redis's clock, read just before) and, for an interval, from the
  creation time it read; the revision it read guards that reading: when the schedule changed in
  between, nothing is written and the caller reads again. Every call bumps the revision, which
  fences a round that took the schedule before (see advanceSchedule).

  Input:
    KEYS[1] the schedule (hash)
    KEYS[2] the due set (sorted set: schedule id -> next tick ms; +inf while paused)
    ARGV[1] schedule id
    ARGV[2] spec (JSON)
    ARGV[3] task template (JSON)
    ARGV[4] paused ('1' | '0')
    ARGV[5] next tick (ms)
    ARGV[6] now (ms): updatedAt, and createdAt of a new schedule (or of one whose createdAt is not an integer)
    ARGV[7] the revision the caller read ('' when there was no schedule)

  Returns:
    1 created, 2 replaced, -1 changed since the caller read it (nothing written: read again)
]]
local key, due = KEYS[1], KEYS[2]
local id, spec, template, paused, nextTick, now, expected = unpack(ARGV, 1, 7)
local current = redis.call('HMGET', key, 'rev', 'createdAt', 'fired', 'skipped', 'missed')
local rev = current[1]
if (rev or '') ~= expected then
  return -1
end
-- A new schedule starts its counters and is created now; a replaced one keeps them (one that lost
-- them, written by something else, gets them afresh, as the caller assumed in anchoring it).
local function isInt(value)
  return value and string.match(value, '^%-?%d+$') ~= nil
end
if not isInt(current[2]) then
  redis.call('HSET', key, 'createdAt', now)
end
for i, field in ipairs({ 'fired', 'skipped', 'missed' }) do
  if not isInt(current[i + 2]) then
    redis.call('HSET', key, field, 0)
  end
end
redis.call('HSET', key, 'id', id, 'spec', spec, 'template', template, 'paused', paused, 'nextTickAt', nextTick,
  'rev', (tonumber(rev) or 0) + 1, 'updatedAt', now)
redis.call('ZADD', due, paused == '1' and '+inf' or nextTick, id)
return rev and 2 or 1
