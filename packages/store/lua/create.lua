-- Creates a batch of a queue's tasks (PENDING records) and enqueues each: an entry in its priority
-- lane, or, with a start time, a member of the lane's delayed set. One call, one slot.
-- KEYS: lane high, lane normal, lane low, delayed high, delayed normal, delayed low, task index,
--       submit batch marker
-- ARGV: queue, taskBase, streamBase, createdAt, trimIndexTo (0: no trim), useMarker (0|1), then per task
--       (WIDTH fields): name, agent, payload, detailed, maxRetries, timeoutMs|'', metadata|'',
--       maxDeliveries, backoff|'', runAt|'', lane (1 high, 2 normal, 3 low), submitId|'', trace (W3C carrier JSON)|''
-- A task with a submitId is checked first: an existing record of that name is a duplicate id
-- (0), unless it holds this submitId (a resend after a lost reply: 1, nothing written again).
-- A batch with useMarker is checked as a whole the same way, through its marker key.
-- Returns a string of '1' (created) and '0' (name taken), one per task.
local WIDTH = 13
if ARGV[6] == '1' then
  local done = redis.call('GET', KEYS[8])
  if done then
    return done
  end
end
local queue, base, streamBase, now = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local out = {}
for i = 7, #ARGV, WIDTH do
  local name = ARGV[i]
  local key = base .. name
  local created = '1'
  local submitId = ARGV[i + 11]
  if submitId ~= '' and redis.call('EXISTS', key) == 1 then
    created = '0'
    if redis.call('HGET', key, 'submitId') == submitId then
      created = '1'
    end
  else
    if submitId ~= '' then
      -- A caller-chosen name may be reused once its record expired: its old events must not replay.
      redis.call('DEL', streamBase .. name)
    end
    local f = { 'taskId', queue .. '/' .. name, 'queue', queue, 'agent', ARGV[i + 1], 'payload', ARGV[i + 2],
      'createdAt', now, 'status', 'PENDING', 'maxRetries', ARGV[i + 4], 'maxDeliveries', ARGV[i + 7] }
    local lane = tonumber(ARGV[i + 10])
    if ARGV[i + 3] == '1' then f[#f + 1] = 'detailed'; f[#f + 1] = '1' end
    if ARGV[i + 5] ~= '' then f[#f + 1] = 'timeoutMs'; f[#f + 1] = ARGV[i + 5] end
    if ARGV[i + 6] ~= '' then f[#f + 1] = 'metadata'; f[#f + 1] = ARGV[i + 6] end
    if ARGV[i + 8] ~= '' then f[#f + 1] = 'backoff'; f[#f + 1] = ARGV[i + 8] end
    if ARGV[i + 9] ~= '' then f[#f + 1] = 'runAt'; f[#f + 1] = ARGV[i + 9] end
    if lane ~= 2 then f[#f + 1] = 'priority'; f[#f + 1] = lane == 1 and 'high' or 'low' end
    if submitId ~= '' then f[#f + 1] = 'submitId'; f[#f + 1] = submitId end
    if ARGV[i + 12] ~= '' then f[#f + 1] = 'trace'; f[#f + 1] = ARGV[i + 12] end
    redis.call('HSET', key, unpack(f))
    if ARGV[i + 9] ~= '' then
      redis.call('ZADD', KEYS[3 + lane], ARGV[i + 9], name)
    else
      redis.call('XADD', KEYS[lane], '*', 'task', name)
    end
    redis.call('ZADD', KEYS[7], now, name)
  end
  out[#out + 1] = created
end
if ARGV[5] ~= '0' then
  redis.call('ZREMRANGEBYRANK', KEYS[7], 0, -tonumber(ARGV[5]) - 1)
end
local reply = table.concat(out)
if ARGV[6] == '1' then
  redis.call('SET', KEYS[8], reply, 'PX', 600000)
end
return reply
