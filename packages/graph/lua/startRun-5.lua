#!lua
--[[
  Starts a graph run: its record (RUNNING, with its graph, topology, input and options) and a
  CREATED instance of each first node. Replay-safe: a run that exists already is left as it is and
  its first nodes are returned again, so a start resent after a lost reply, or finished by a
  sweeper, creates nothing twice.

  Input:
    KEYS[1] run record
    KEYS[2] run nodes (instance -> state)
    KEYS[3] run outputs
    KEYS[4] run joins
    KEYS[5] run events
    ARGV[1] now (ms; '' for Redis's clock)
    ARGV[2] run id
    ARGV[3] graph name
    ARGV[4] graph (JSON, as started)
    ARGV[5] topology (JSON, see advance-5.lua)
    ARGV[6] input (JSON)
    ARGV[7] options (JSON)
    ARGV[8] first nodes, comma-separated
    ARGV[9] events kept (approximate)

  Returns:
    { 'started' | 'exists', status, instances created (comma-separated) }
]]
--- @include "@flotilla/broker/redisNow"
--- @include "runEvent"
local runId, graphName, graph, topology, input, options, roots, maxLen = unpack(ARGV, 2, 9)
local now = redisNow(ARGV[1])
local status = redis.call('HGET', KEYS[1], 'status')
if status then
  local first = {}
  for id in string.gmatch(roots, '[^,]+') do
    first[#first + 1] = id .. '@#1'
  end
  return { 'exists', status, table.concat(first, ',') }
end
local run = { events = KEYS[5], maxLen = maxLen, now = now }
local created = {}
for id in string.gmatch(roots, '[^,]+') do
  local key = id .. '@#1'
  redis.call('HSET', KEYS[4], 'n:' .. id .. '@', 1)
  redis.call('HSET', KEYS[2], key, 'CREATED')
  created[#created + 1] = key
end
redis.call('HSET', KEYS[1], 'runId', runId, 'graphName', graphName, 'status', 'RUNNING', 'createdAt', now, 'graph', graph,
  'topo', topology, 'input', input, 'options', options, 'open', #created)
runEvent(run, 'run-started', { 'graph', graphName })
for _, key in ipairs(created) do
  runEvent(run, 'node-created', { 'node', key })
end
return { 'started', 'RUNNING', table.concat(created, ',') }
