#!lua
--[[
  Advances a graph run by the ends of some of its node instances (a worker's settle batch, or what
  a sweeper found), in one step in the run's slot, one end after another: records each outcome (and
  output or error), resolves the edges it leaves by, and creates (as CREATED) every node instance
  that becomes ready: a node once each of its in-edges is resolved (by a predecessor that chose it:
  live; one that did not, or was skipped: skip; one that failed: fail); a unites node once every
  branch of its fan-out resolved its in-edges. A node none of whose in-edges is live is SKIPPED and
  passes the skip on; a failure passes on the same way until an `all-done` unites node takes it in
  (it runs with the failure) or it reaches an `all-success` unites node or a node with nothing
  after it: then the run fails. A node whose failure would fail the run (topology `ff` or `fr`)
  passes nothing on: `ff` (fail-fast) fails the run at once; `fr` (its join's onBranchFailure is
  finish-running) is noted on the run, which goes on and fails once no instance is left open. The
  run succeeds when no instance is left open and no failure was noted.
  The caller then creates a task for each instance created (a duplicate create is a no-op).
  Replay-safe: an instance that ended already changes nothing and gets back what its end created,
  so a hand-off resent after a crash creates the same successors, never others.

  Why one call for many ends: the run's record, its topology and the counters the ends share (a
  unites node's join, the open count) are read and written once per call instead of once per node.
  Writes to the nodes, outputs and joins hashes are gathered and made at the end of the call.

  Instances are `<node>@<branch>#<n>`: the branch is the fan-out item indexes that lead to it
  ('' outside any fan-out, '3', '3.7'), n counts the node's runs on that branch (loops).

  Input:
    KEYS[1] run record (status, topo, open; failures, failed: the failures noted, and the first
      FAILED_LISTED failed instances, comma-separated)
    KEYS[2] run nodes (instance -> CREATED | EXECUTED | ERRORED | CANCELLED | SKIPPED; '<instance>>' -> what its end created)
    KEYS[3] run outputs (instance -> output JSON; '!<instance>' -> error JSON)
    KEYS[4] run joins ('c:'/'l:'/'x:' in-edges resolved / live / failed, per node@branch of a node with
      several in-edges or a unites node; 'w:' fan-out widths; 'n:' runs per node@branch of a node in or
      after a loop; 'r:' loops taken per node@branch)
    KEYS[5] run events
    ARGV[1] now (ms; '' for Redis's clock)
    ARGV[2] ttlMs: the run's keys expire this long after it ends
    ARGV[3] events kept (approximate)
    ARGV[4..] per end (7): the instance that ended; its outcome (EXECUTED | ERRORED | CANCELLED); its
      output (JSON; '' for none); its error (JSON; '' for none); items of a fan-out that executed
      ('' otherwise); the next nodes it chose, comma-separated ('*': all of them); the retry of the
      run its task was created in (0: the first run; see retryRun-5.lua: the end of a task an
      earlier try created is stale)

  Returns:
    { run status after the call, 1 if this call ended the run (else 0), then per end: reply,
    instances created (comma-separated) }: reply 'ok'; 'replay' (the instance had ended: what it
    created then); 'stale' (a task of an earlier try of the instance: nothing done); 'ended' (the run
    had ended: the outcome is recorded, nothing created); 'unknown' (no such instance). A run that
    does not exist: { 'missing', 0 }.
]]
--- @include "@flotilla/broker/redisNow"
--- @include "runEvent"
--- @include "endRun"
--- @include "expireRun"
local WIDTH = 7
-- A run's error lists this many failed instances at most (`failures` counts them all).
local FAILED_LISTED = 100
local runKey, nodesKey, outputsKey, joinsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local run = { key = runKey, events = KEYS[5], maxLen = ARGV[3], now = redisNow(ARGV[1]), ttlMs = ARGV[2], keys = KEYS }
local status, topoText, openText, failuresText, failedText = unpack(redis.call('HMGET', runKey, 'status', 'topo', 'open', 'failures', 'failed'))
if not status then
  return { 'missing', 0 }
end
local wasRunning = status == 'RUNNING'
local open = tonumber(openText) or 0
local failures = tonumber(failuresText) or 0
local failed = {}
for i in string.gmatch(failedText or '', '[^,]+') do
  failed[#failed + 1] = i
end
local topo = nil

-- Every end's instance state and try, in one read.
local wanted = {}
for i = 4, #ARGV, WIDTH do
  wanted[#wanted + 1] = ARGV[i]
  wanted[#wanted + 1] = ARGV[i] .. '~'
end
local priors = #wanted > 0 and redis.call('HMGET', nodesKey, unpack(wanted)) or {}

-- Writes gathered for the end of the call (field -> value; false: delete). A join field is read
-- once per call (`joinReads`); the writes shadow it.
local nodes, outputs, joins, joinReads = {}, {}, {}, {}
local function jget(field)
  local v = joins[field]
  if v ~= nil then
    return v
  end
  v = joinReads[field]
  if v == nil then
    v = redis.call('HGET', joinsKey, field) or false
    joinReads[field] = v
  end
  return v
end
local function jnum(field)
  return tonumber(jget(field)) or 0
end

-- A node's error as recorded (JSON), or nil when it cannot be read.
local function causeOf(errText)
  local ok, decoded = pcall(cjson.decode, errText or '')
  return ok and type(decoded) == 'table' and decoded or nil
end
local function failedMessage(id, cause)
  return 'node ' .. id .. ' failed' .. (cause and type(cause.message) == 'string' and (': ' .. cause.message) or '')
end
-- The run's error: why it ended, the instance whose end decided it and that node's error, and every
-- failure noted (instances listed up to FAILED_LISTED).
local function runError(message, code, node, cause)
  local e = { message = message, code = code, node = node, cause = cause }
  if failures > 0 then
    e.failures = failures
    e.failed = failed
  end
  return cjson.encode(e)
end

local function childPath(p, i)
  return p == '' and tostring(i) or p .. '.' .. i
end
local function parentPath(p)
  return string.match(p, '^(.*)%.%d+$') or ''
end

-- One end, as the script's header says; returns its reply and what it created.
local function advanceOne(inst, outcome, output, errText, width, chosen, try, prior, priorTry)
  local written = nodes[inst]
  if written ~= nil then
    prior = written
  end
  if not prior then
    return 'unknown', ''
  end
  if (tonumber(priorTry) or 0) ~= (tonumber(try) or 0) then
    return 'stale', ''
  end
  if prior ~= 'CREATED' then
    local made = nodes[inst .. '>']
    if made == nil then
      made = redis.call('HGET', nodesKey, inst .. '>') or ''
    end
    return 'replay', made or ''
  end
  if output ~= '' then
    outputs[inst] = output
  end
  if errText ~= '' then
    outputs['!' .. inst] = errText
  end
  runEvent(run, 'node-finished', { 'node', inst, 'status', outcome })
  if status ~= 'RUNNING' then
    nodes[inst] = outcome
    open = open - 1
    return 'ended', ''
  end

  topo = topo or cjson.decode(topoText).n
  local id, path = string.match(inst, '^(.-)@([^#]*)#%d+$')
  local created = {}
  local failure = nil
  -- The error of the node whose failure failed the run, told with the run's own.
  local cause = nil

  local function newInstance(node, p, state)
    local n = 1
    -- Only a node that can run more than once on a branch (in or after a loop) counts its runs.
    if topo[node].l then
      n = jnum('n:' .. node .. '@' .. p) + 1
      joins['n:' .. node .. '@' .. p] = n
    end
    local key = node .. '@' .. p .. '#' .. n
    nodes[key] = state
    return key
  end
  local function create(node, p)
    created[#created + 1] = newInstance(node, p, 'CREATED')
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
    local live, failed = jget('l:' .. jk), jget('x:' .. jk)
    joins['c:' .. jk], joins['l:' .. jk], joins['x:' .. jk] = false, false, false
    decide(node, p, live, failed)
  end

  -- A fan-out node@p that has no branches (no items, skipped or failed): each node that unites it
  -- is ready at once, as `kind` says.
  local function noBranches(node, p, kind)
    joins['w:' .. node .. '@' .. p] = 0
    local joined = false
    for uid, t in pairs(topo) do
      if t.u == node then
        joined = true
        if kind ~= 'skip' then
          joins[(kind == 'live' and 'l:' or 'x:') .. uid .. '@' .. p] = 1
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
      expected = jnum('w:' .. t.u .. '@' .. jp) * t.d
    end
    local jk = node .. '@' .. jp
    local count = jnum('c:' .. jk) + 1
    joins['c:' .. jk] = count
    if kind == 'live' then
      joins['l:' .. jk] = 1
    elseif kind == 'fail' then
      joins['x:' .. jk] = 1
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
        joins['w:' .. id .. '@' .. path] = items
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
          local r = jnum('r:' .. id .. '@' .. path) + 1
          joins['r:' .. id .. '@' .. path] = r
          if r < (t.m or 1) then
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
    if topo[id].ff or topo[id].fr then
      -- Nothing but the failure is recorded: the rest of the run stays as it was, for retryRun-5.lua.
      failures = failures + 1
      if #failed < FAILED_LISTED then
        failed[#failed + 1] = inst
      end
      if topo[id].ff then
        cause = causeOf(errText)
        failure = failedMessage(id, cause)
      end
    else
      passOn(id, path, 'fail')
    end
  else
    failure = 'node ' .. id .. ' was cancelled'
  end

  local made = table.concat(created, ',')
  if made ~= '' then
    -- One event for everything this end created (a fan-out's every branch).
    runEvent(run, 'node-created', { 'nodes', made })
  end
  open = open + #created - 1
  if failure then
    for _, key in ipairs(created) do
      nodes[key] = 'CANCELLED'
    end
    open = open - #created
    created, made = {}, ''
    local ended = outcome == 'CANCELLED' and 'CANCELLED' or 'FAILED'
    endRun(run, ended, runError(failure, ended == 'FAILED' and 'RUN_FAILED' or 'RUN_CANCELLED', inst, cause))
    status = ended
  elseif open <= 0 and failures > 0 then
    -- Finish-running: every other node has ended; the run fails with the first failure noted.
    local first = failed[1]
    local firstCause = causeOf(outputs['!' .. first] or redis.call('HGET', outputsKey, '!' .. first))
    local message = failedMessage(string.match(first, '^(.-)@'), firstCause)
    if failures > 1 then
      message = message .. ' (and ' .. (failures - 1) .. ' more)'
    end
    endRun(run, 'FAILED', runError(message, 'RUN_FAILED', first, firstCause))
    status = 'FAILED'
  elseif open <= 0 then
    endRun(run, 'SUCCEEDED', nil)
    status = 'SUCCEEDED'
  end
  nodes[inst] = outcome
  if made ~= '' then
    -- What its end created, for a replay of this hand-off.
    nodes[inst .. '>'] = made
  end
  return 'ok', made
end

local reply = { '', 0 }
local e = 0
for i = 4, #ARGV, WIDTH do
  local r, made = advanceOne(ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4], ARGV[i + 5], ARGV[i + 6], priors[e + 1], priors[e + 2])
  e = e + 2
  reply[#reply + 1] = r
  reply[#reply + 1] = made
end

-- The gathered writes, a few hundred fields per command.
local function flush(key, writes)
  local set, del = {}, {}
  for field, value in pairs(writes) do
    if value == false then
      del[#del + 1] = field
    else
      set[#set + 1] = field
      set[#set + 1] = value
    end
    if #set >= 400 then
      redis.call('HSET', key, unpack(set))
      set = {}
    end
    if #del >= 200 then
      redis.call('HDEL', key, unpack(del))
      del = {}
    end
  end
  if #set > 0 then
    redis.call('HSET', key, unpack(set))
  end
  if #del > 0 then
    redis.call('HDEL', key, unpack(del))
  end
end
flush(nodesKey, nodes)
flush(outputsKey, outputs)
flush(joinsKey, joins)
if open ~= (tonumber(openText) or 0) then
  redis.call('HSET', runKey, 'open', open)
end
if failures ~= (tonumber(failuresText) or 0) then
  redis.call('HSET', runKey, 'failures', failures, 'failed', table.concat(failed, ','))
end
if status ~= 'RUNNING' then
  -- After the last write (a key first written now would otherwise never expire); a late end of a
  -- run that had ended renews the time to live of what it wrote with the rest.
  expireRun(run)
end
reply[1] = status
reply[2] = (wasRunning and status ~= 'RUNNING') and 1 or 0
return reply
