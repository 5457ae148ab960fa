-- Appends one lifecycle event to a run's stream (`run.events`), trimmed to about `run.maxLen`
-- entries: `type` (run-started, node-created, node-finished, node-skipped, run-finished), then the
-- flat list of fields given.
local function runEvent(run, type, fields)
  redis.call('XADD', run.events, 'MAXLEN', '~', run.maxLen, '*', 'type', type, 'ts', run.now, unpack(fields))
end
