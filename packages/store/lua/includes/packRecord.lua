--- @include "jsonString"
-- Writes a COMPLETED task's record packed: its readable fields as one JSON object in the field 'z',
-- beside the two every script's fence reads ('status', 'attempt') and a graph node's 'handoff' flag.
-- Why: a record with a field over 64 bytes (a payload, a result, a status log) is a hash table, which
-- costs ~50 bytes per field on top of its value: ~25 fields came to 2.1 KB for a no-op agent. Packed,
-- it is under 1 KB, and records of completed tasks are the bulk of what Redis keeps (24 h).
-- What a completed task no longer needs is dropped: what only its start or its run read (payload,
-- signature, trace, backoff, entryId, the event batch marks), what only a retry or a wait used, an
-- earlier attempt's error, and what the rest tells: the task id (the key's name), its queue, and
-- seq, completedAt and durationMs (the completed event's seq and ts, written last in the same call,
-- and that ts less startedAt, as recordOutcome computes it).
-- Members have short names (PACK_NAMES); JSON fields (result, usage, metadata) go in as they are,
-- the status log as an array, numbers bare, the rest as strings.
-- @flotilla/store's readers unpack it (record.ts: PACKED_NAMES mirrors this table, a test checks),
-- and create-8.lua finds a resent submit's submitId in it (includes/packedField.lua).
-- The record is written anew (DEL + HSET) and expires `ttlMs` from now.
-- Left out of 'z': what stays beside it (status, attempt, handoff) and what is dropped.
local PACK_SKIP = {
  status = true, attempt = true, handoff = true, z = true, payload = true, signature = true, trace = true,
  backoff = true, entryId = true, lastBatch = true, deliveriesBase = true, retryAt = true, resume = true,
  signal = true, waiting = true, parked = true, parkedAt = true, error = true, queue = true, seq = true, taskId = true,
  completedAt = true, durationMs = true, inbox = true, lastTake = true, lastTaken = true
}
-- Each member's opening: its short name ('"t":'), written whole so that packing makes no string for it.
local PACK_NAMES = {
  agent = '"a":', createdAt = '"c":', startedAt = '"b":', waitMs = '"w":', workerId = '"k":', result = '"r":',
  usage = '"u":', metadata = '"m":', maxRetries = '"x":', maxDeliveries = '"y":', retries = '"n":',
  timeoutMs = '"o":', runAt = '"ra":', priority = '"p":', detailed = '"dt":', submitId = '"s":', log = '"l":',
  cancelRequestedAt = '"cr":', cancelReason = '"cn":', concurrencyKey = '"ck":', concurrencyLimit = '"cl":',
  inputPreview = '"ip":'
}
-- What the outcome's read does not hold already (recordOutcome's OUTCOME_FIELDS): read with it, in
-- the same HMGET, when the outcome completes the task. With PACK_NAMES and PACK_SKIP it covers every
-- field of RECORD_FIELDS (a test checks), so nothing a reader shows is left behind.
local PACK_EXTRA_FIELDS = { 'createdAt', 'waitMs', 'workerId', 'result', 'usage', 'metadata', 'maxRetries',
  'maxDeliveries', 'timeoutMs', 'runAt', 'priority', 'detailed', 'submitId', 'concurrencyLimit', 'inputPreview' }
-- The members in the order they are written, and how each is written: 'n' bare (a number), 'j' as
-- the JSON it holds, 'l' as an array (the status log), 's' as a JSON string.
local PACK_ORDER = { 'agent', 'createdAt', 'startedAt', 'waitMs', 'workerId', 'result', 'usage', 'metadata', 'maxRetries',
  'maxDeliveries', 'retries', 'timeoutMs', 'runAt', 'priority', 'detailed', 'submitId', 'log', 'cancelRequestedAt',
  'cancelReason', 'concurrencyKey', 'concurrencyLimit', 'inputPreview' }
local PACK_KIND = {
  agent = 's', createdAt = 'n', startedAt = 'n', waitMs = 'n', workerId = 's', result = 'j', usage = 'j', metadata = 'j',
  maxRetries = 'n', maxDeliveries = 'n', retries = 'n', timeoutMs = 'n', runAt = 'n', priority = 's', detailed = 's',
  submitId = 's', log = 'l', cancelRequestedAt = 'n', cancelReason = 's', concurrencyKey = 's', concurrencyLimit = 'n',
  inputPreview = 's'
}
-- `record`: field -> text of what is packed (the record as read, the outcome's own values over it);
-- `attempt`, `handoff`: the record's, as read (handoff false when absent).
-- One pass over PACK_ORDER with a kind per member: a generic loop over every field read, with the
-- skip, name and kind of each looked up in turn, cost a settle more than all its Redis commands.
local function packRecord(key, ttlMs, record, attempt, handoff)
  -- Pieces added to one table and joined once: every concatenation makes (and hashes) a new Lua string.
  local pieces, n = { '{' }, 1
  for i = 1, #PACK_ORDER do
    local field = PACK_ORDER[i]
    local value = record[field]
    if value then
      local kind = PACK_KIND[field]
      pieces[n + 1] = PACK_NAMES[field]
      if kind == 's' then
        pieces[n + 2] = jsonString(value)
      elseif kind == 'l' then
        pieces[n + 2] = '[' .. value .. ']'
      else
        -- Numbers and JSON written by the scripts (checked by recordFault where they are read): as they are.
        pieces[n + 2] = value
      end
      pieces[n + 3] = ','
      n = n + 3
    end
  end
  pieces[n] = '}'
  local packed = table.concat(pieces)
  redis.call('DEL', key)
  if handoff == '1' then
    redis.call('HSET', key, 'status', 'COMPLETED', 'attempt', attempt, 'handoff', '1', 'z', packed)
  else
    redis.call('HSET', key, 'status', 'COMPLETED', 'attempt', attempt, 'z', packed)
  end
  redis.call('PEXPIRE', key, ttlMs)
end
