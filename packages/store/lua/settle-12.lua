#!lua flags=allow-oom
--[[
  Workers end attempts in batches: each outcome (COMPLETED, FAILED, CANCELLED, RETRYING or WAITING) is
  written to its task record (fenced on its attempt) and its queue entry settled, all in one step:
  acknowledged, moved to the delayed set for a retry, or dead-lettered. The entries of a batch are
  acknowledged and deleted with one XACK and one XDEL per lane.
  Then, with a claim count, it claims and starts that many new entries for the freed slots (as
  claim-6.lua does), so a busy worker makes one round trip per batch: finish these, start the next.

  Input:
    KEYS[1..3] the queue's lanes: high, normal, low
    KEYS[4..6] their delayed sets: high, normal, low
    KEYS[7] dead letters
    KEYS[8] claim marker (unique to this call)
    KEYS[9] statistics bucket
    KEYS[10] finished tasks kept by count: completed (and cancelled)
    KEYS[11] finished tasks kept by count: failed
    KEYS[12] task index
    ARGV[1..6] the call: consumer group, consumer, now (ms; '' for Redis's clock), task key base,
      recordTtlMs (keepCompleted's age: a COMPLETED or CANCELLED record's time to live), status channel
    ARGV[7] dead letters kept (approximate trim)
    ARGV[8] claim count (0: claim nothing)
    ARGV[9] lane order for the claim
    ARGV[10] event stream key base (a task's stream is base .. name)
    ARGV[11] eventTtlMs: a finished task's stream expires this long after the end
    ARGV[12] events until the end only (1: a finished task's stream is deleted)
    ARGV[13] keepCompleted: count (0: no limit); its age is recordTtlMs
    ARGV[14..15] keepFailed: count (0: no limit), ageMs (a FAILED record's time to live)
    ARGV[16..] per outcome (13): lane, entryId, name, attempt, status, result, errorJson, retryIn,
      release, deadReason, usage, waiting, resume
      (entryId '' when there is no entry to settle; release 1: a RETRYING that hands the task back
      unfinished and uses up no retry; usage: JSON token totals of the attempt; retryIn: with RETRYING,
      ms from now until the retry is due, with WAITING until the wait times out ('' never), on Redis's
      clock; waiting, resume: with WAITING, JSON of the signal it waits for and of its run's saved state)

  Returns:
    { outcomes, started }: per outcome { 'ok', status, deadLettered (0|1) } or
    { 'rejected', reason ('missing' | 'terminal' | 'stale'), currentStatus }; per claimed entry a
    reply as in includes/startEntry.lua
]]
--- @include "newBatch"
--- @include "recordOutcome"
--- @include "startNewEntries"
--- @include "finish"
local WIDTH = 13
local group, consumer, now, taskBase, recordTtlMs, statusChannel, deadLetterMaxLen, claimCount, order, streamBase, eventTtlMs,
  untilEnd, completedCount, failedCount, failedAge = unpack(ARGV, 1, 15)
local batch = newBatch({ KEYS[1], KEYS[2], KEYS[3] }, group, consumer, now, taskBase, recordTtlMs)
batch.streams = { base = streamBase, ttlMs = eventTtlMs, untilEnd = untilEnd == '1' }
batch.keep = {
  completed = { set = KEYS[10], count = tonumber(completedCount), ageMs = tonumber(recordTtlMs) },
  failed = { set = KEYS[11], count = tonumber(failedCount), ageMs = tonumber(failedAge) },
  index = KEYS[12],
}
batch.delayed = { KEYS[4], KEYS[5], KEYS[6] }
batch.deadLetters = KEYS[7]
batch.deadLetterMaxLen = deadLetterMaxLen
batch.settled = {}
for i = 16, #ARGV, WIDTH do
  local lane, entryId, name, attempt, status, result, errorJson, retryIn, release, deadReason, usage, waiting,
    resume = unpack(ARGV, i, i + WIDTH - 1)
  local retryAt = retryIn ~= '' and string.format('%d', batch.now + (tonumber(retryIn) or 0)) or ''
  recordOutcome(batch, tonumber(lane), entryId, name, attempt, status, result, errorJson, retryAt, release, deadReason,
    usage, waiting, resume)
end
if tonumber(claimCount) > 0 then
  startNewEntries(batch, tonumber(claimCount), order, KEYS[8])
end
finish(batch, KEYS[9], statusChannel)
return { batch.settled, batch.replies }
