-- The one writer of dead letters: an entry that could not be run, with the reason, the entry's
-- fields (JSON) and, when it named a task, the task id; `extra` (JSON) carries its lane, attempts
-- and last error. The stream keeps about `maxLen` entries.
local function addDeadLetter(deadLetters, maxLen, entryId, reason, fields, now, taskId, extra)
  redis.call('XADD', deadLetters, 'MAXLEN', '~', maxLen, '*', 'entryId', entryId, 'reason', reason, 'fields', fields,
    'at', now, 'taskId', taskId, 'extra', extra)
end
