-- Renews the leases of the entries this consumer holds: XCLAIM ... JUSTID resets an entry's idle
-- time without counting a delivery. Entries it no longer owns are returned, so their runs stop.
-- KEYS: queue stream
-- ARGV: group, consumer, entryId...
--@include "owner"
local lost = {}
for i = 3, #ARGV do
  if ownedBy(KEYS[1], ARGV[1], ARGV[i], ARGV[2]) then
    redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, ARGV[i], 'JUSTID')
  else
    lost[#lost + 1] = ARGV[i]
  end
end
return lost
