#!lua
--[[
  Advances a graph run by one node instance's end, in one step in the run's slot: records the
  outcome (and output or error), resolves the edges it leaves by, and creates (as CREATED) every
  node instance that becomes ready: a node once each of its in-edges is resolved (by a predecessor
  that chose it: live; one that did not, or was skipped: skip; one that failed: fail); a unites node
  once every branch of its fan-out resolved its in-edges. A node none of whose in-edges is live is
  SKIPPED and passes the skip on; a failure passes on the same way until an `all-done` unites node
  takes it in (it runs with the failure) or it reaches an `all-success` unites node or a node with
  nothing after it: then the run fails. The run succeeds when no instance is left open.
  The caller then creates a task for each instance created (a duplicate create is a no-op).
  Replay-safe: an instance that ended already changes nothing and gets back what its end created,
  so a hand-off resent after a crash creates the same successors, never others.

  Instances are `<node>@<branch>#<n>`: the branch is the fan-out item indexes that lead to it
  ('' outside any fan-out, '3', '3.7'), n counts the node's runs on that branch (loops).

  Input:
    KEYS[1] run record (status, topo, open)
    KEYS[2] run nodes (instance -> CREATED | EXECUTED | ERRORED | CANCELLED | SKIPPED; '<instance>>' -> what its end created)
    KEYS[3] run outputs (instance -> output JSON; '!<instance>' -> error JSON)
    KEYS[4] run joins ('c:'/'l:'/'x:' in-edges resolved / live / failed, per node@branch of a node with
      several in-edges or a unites node; 'w:' fan-out widths; 'n:' runs per node@branch of a node in or
      after a loop; 'r:' loops taken per node@branch)
    KEYS[5] run events
    ARGV[1] now (ms; '' for Redis's clock)
    ARGV[2] the instance that ended
    ARGV[3] its outcome: EXECUTED | ERRORED | CANCELLED
    ARGV[4] its output (JSON; '' for none)
    ARGV[5] its error (JSON; '' for none)
    ARGV[6] items of a fan-out that executed ('' otherwise)
    ARGV[7] the next nodes it chose, comma-separated ('*': all of them)
    ARGV[8] ttlMs: the run's keys expire this long after it ends
    ARGV[9] events kept (approximate)
    ARGV[10] the retry of the run the ended task was created in (0: the first run; see retryRun-5.lua):
      the end of a task an earlier try created is stale

  Returns:
    { reply, run status, instances created (comma-separated) }: reply 'ok'; 'replay' (the instance
    had ended: what it created then); 'stale' (a task of an earlier try of the instance: nothing done); 'ended' (the run had ended: the outcome is recorded, nothing
    created); 'unknown' (no such instance); 'missing' (no such run)
]]
--- @include "@flotilla/broker/redisNow"
--- @include "runEvent"
--- @include "endRun"
local runKey, nodesKey, outputsKey, joinsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local inst, outcome, output, errText, width, chosen, ttlMs, maxLen = unpack(ARGV, 2, 9)
local run = { key = runKey, events = KEYS[5], maxLen = maxLen, now = redisNow(ARGV[1]), ttlMs = ttlMs, keys = KEYS }
local status, topoText = unpack(redis.call('HMGET', runKey, 'status', 'topo'))
if not status then
  return { 'missing', '', '' }
end
local prior, try = unpack(redis.call('HMGET', nodesKey, inst, inst .. '~'))
if not prior then
  return { 'unknown', status, '' }
end
if (tonumber(try) or 0) ~= (tonumber(ARGV[10]) or 0) then
  return { 'stale', status, '' }
end
if prior ~= 'CREATED' then
  return { 'replay', status, redis.call('HGET', nodesKey, inst .. '>') or '' }
end
if output ~= '' then
  redis.call('HSET', outputsKey, inst, output)
end
if errText ~= '' then
  redis.call('HSET', outputsKey, '!' .. inst, errText)
end
runEvent(run, 'node-finished', { 'node', inst, 'status', outcome })
if status ~= 'RUNNING' then
  redis.call('HSET', nodesKey, inst, outcome)
  redis.call('HINCRBY', runKey, 'open', -1)
  return { 'ended', status, '' }
end

local topo = cjson.decode(topoText).n
local id, path = string.match(inst, '^(.-)@([^#]*)#%d+$')
local created = {}
local failure = nil
-- The error of the node whose failure failed the run, told with the run's own.
local cause = nil

local function childPath(p, i)
  return p == '' and tostring(i) or p .. '.' .. i
end
local function parentPath(p)
  return string.match(p, '^(.*)%.%d+$') or ''
end
local function newInstance(node, p, state)
  -- Only a node that can run more than once on a branch (in or after a loop) counts its runs.
  local n = topo[node].l and redis.call('HINCRBY', joinsKey, 'n:' .. node .. '@' .. p, 1) or 1
  local key = node .. '@' .. p .. '#' .. n
  redis.call('HSET', nodesKey, key, state)
  return key
end
local function create(node, p)
  local key = newInstance(node, p, 'CREATED')
  created[#created + 1] = key
  runEvent(run, 'node-created', { 'node', key })
end

local resolve, passOn

-- Every in-edge of node@p is resolved (`live`: one of them chose it; `failed`: a failure came by
-- one): run it, skip it, or fail the run.
local function decide(node, p, live, failed)
  local t = topo[node]
  if failed and not (t.u and t.p == 'all-done') then
    if t.u then
      failure = failure or ('a branch of ' .. t.u .. ' failed, and ' .. node .. ' unites it with all-success')
      return
    end
    local key = newInstance(node, p, 'SKIPPED')
    runEvent(run, 'node-skipped', { 'node', key, 'reason', 'upstream-failed' })
    passOn(node, p, 'fail')
  elseif live or failed then
    create(node, p)
  else
    local key = newInstance(node, p, 'SKIPPED')
    runEvent(run, 'node-skipped', { 'node', key, 'reason', 'not-chosen' })
    passOn(node, p, 'skip')
  end
end

-- The join of node@p is complete: its flags decide, and its counters go.
local function ready(node, p)
  local jk = node .. '@' .. p
  local live, failed = unpack(redis.call('HMGET', joinsKey, 'l:' .. jk, 'x:' .. jk))
  redis.call('HDEL', joinsKey, 'c:' .. jk, 'l:' .. jk, 'x:' .. jk)
  decide(node, p, live, failed)
end

-- A fan-out node@p that has no branches (no items, skipped or failed): each node that unites it is
-- ready at once, as `kind` says.
local function noBranches(node, p, kind)
  redis.call('HSET', joinsKey, 'w:' .. node .. '@' .. p, 0)
  local joined = false
  for uid, t in pairs(topo) do
    if t.u == node then
      joined = true
      if kind ~= 'skip' then
        redis.call('HSET', joinsKey, (kind == 'live' and 'l:' or 'x:') .. uid .. '@' .. p, 1)
      end
      ready(uid, p)
    end
  end
  if kind == 'fail' and not joined then
    failure = failure or ('node ' .. node .. ' failed')
  end
end

-- Resolves the in-edge of `node` coming from branch `p` as `kind` (live, skip or fail).
resolve = function(node, p, kind)
  local t = topo[node]
  if not t.u and t.d == 1 then
    -- A single in-edge needs no counting.
    decide(node, p, kind == 'live', kind == 'fail')
    return
  end
  local jp, expected = p, t.d
  if t.u then
    jp = parentPath(p)
    expected = tonumber(redis.call('HGET', joinsKey, 'w:' .. t.u .. '@' .. jp) or '0') * t.d
  end
  local jk = node .. '@' .. jp
  local count = redis.call('HINCRBY', joinsKey, 'c:' .. jk, 1)
  if kind == 'live' then
    redis.call('HSET', joinsKey, 'l:' .. jk, 1)
  elseif kind == 'fail' then
    redis.call('HSET', joinsKey, 'x:' .. jk, 1)
  end
  if count >= expected then
    ready(node, jp)
  end
end

-- Passes a skip or a failure of node@p on along its forward edges.
passOn = function(node, p, kind)
  local t = topo[node]
  if t.f then
    noBranches(node, p, kind)
    return
  end
  local forward = 0
  for _, e in ipairs(t.s) do
    if e[2] == 0 then
      forward = forward + 1
      resolve(e[1], p, kind)
    end
  end
  if kind == 'fail' and forward == 0 then
    failure = failure or ('node ' .. node .. ' failed')
  end
end

if outcome == 'EXECUTED' then
  local t = topo[id]
  local pick = nil
  if chosen ~= '*' then
    pick = {}
    for next in string.gmatch(chosen, '[^,]+') do
      pick[next] = true
    end
  end
  local function picked(next)
    return pick == nil or pick[next] == true
  end
  if t.f then
    local items = tonumber(width) or 0
    if items == 0 then
      noBranches(id, path, 'live')
    else
      redis.call('HSET', joinsKey, 'w:' .. id .. '@' .. path, items)
      for i = 0, items - 1 do
        for _, e in ipairs(t.s) do
          resolve(e[1], childPath(path, i), picked(e[1]) and 'live' or 'skip')
        end
      end
    end
  else
    local looped, limited, forwardPicked = false, false, false
    for _, e in ipairs(t.s) do
      if e[2] == 1 and picked(e[1]) then
        -- maxIterations counts every pass of the loop body, the first included.
        if redis.call('HINCRBY', joinsKey, 'r:' .. id .. '@' .. path, 1) < (t.m or 1) then
          create(e[1], path)
          looped = true
        else
          limited = true
        end
      elseif e[2] == 0 and picked(e[1]) then
        forwardPicked = true
      end
    end
    for _, e in ipairs(t.s) do
      if e[2] == 0 then
        if picked(e[1]) or (limited and not forwardPicked) then
          -- At the loop's limit, a node that chose only to loop goes on by every forward edge.
          resolve(e[1], path, 'live')
        elseif not looped then
          -- While the loop runs, the edges it did not take wait for a later pass.
          resolve(e[1], path, 'skip')
        end
      end
    end
  end
elseif outcome == 'ERRORED' then
  if topo[id].ff then
    -- Nothing but the failure is recorded: the rest of the run stays as it was, for retryRun-5.lua.
    local ok, decoded = pcall(cjson.decode, errText)
    cause = ok and type(decoded) == 'table' and decoded or nil
    failure = 'node ' .. id .. ' failed' .. (cause and type(cause.message) == 'string' and (': ' .. cause.message) or '')
  else
    passOn(id, path, 'fail')
  end
else
  failure = 'node ' .. id .. ' was cancelled'
end

local open = redis.call('HINCRBY', runKey, 'open', #created - 1)
if failure then
  for _, key in ipairs(created) do
    redis.call('HSET', nodesKey, key, 'CANCELLED')
  end
  if #created > 0 then
    redis.call('HINCRBY', runKey, 'open', 0 - #created)
  end
  created = {}
  local ended = outcome == 'CANCELLED' and 'CANCELLED' or 'FAILED'
  endRun(run, ended, cjson.encode({ message = failure, code = ended == 'FAILED' and 'RUN_FAILED' or 'RUN_CANCELLED', node = inst, cause = cause }))
  status = ended
elseif open <= 0 then
  endRun(run, 'SUCCEEDED', nil)
  status = 'SUCCEEDED'
end
local made = table.concat(created, ',')
if made == '' then
  redis.call('HSET', nodesKey, inst, outcome)
else
  -- What its end created, for a replay of this hand-off.
  redis.call('HSET', nodesKey, inst, outcome, inst .. '>', made)
end
return { 'ok', status, made }
