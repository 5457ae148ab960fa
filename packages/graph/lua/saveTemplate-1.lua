#!lua
--[[
  Saves a graph template's version. Versions never change: a version that exists with other content
  is refused; the same content again is accepted. Without a version, the next free one is taken.
  `latest` only moves forward.

  Input:
    KEYS[1] the template's hash (`<n>` -> graph JSON without its version; `latest`; `next`)
    ARGV[1] version ('' for the next one)
    ARGV[2] graph JSON (its version left out)

  Returns:
    { 'saved' | 'same' | 'conflict', version }
]]
local key = KEYS[1]
local version = tonumber(ARGV[1])
if not version then
  version = redis.call('HINCRBY', key, 'next', 1)
  while redis.call('HEXISTS', key, tostring(version)) == 1 do
    version = redis.call('HINCRBY', key, 'next', 1)
  end
elseif tonumber(redis.call('HGET', key, 'next') or '0') < version then
  redis.call('HSET', key, 'next', version)
end
local field = tostring(version)
local stored = redis.call('HGET', key, field)
if stored then
  return { stored == ARGV[2] and 'same' or 'conflict', version }
end
redis.call('HSET', key, field, ARGV[2])
if tonumber(redis.call('HGET', key, 'latest') or '0') < version then
  redis.call('HSET', key, 'latest', version)
end
return { 'saved', version }
