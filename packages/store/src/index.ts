export { decodeCursor, encodeCursor, type Position } from "./cursor.ts";
export {
  flushEventAppends,
  readTaskLog,
  readTaskLogPage,
  subscribeStatus,
  subscribeTaskEvents,
  TaskEventLog,
  type TaskLog,
} from "./event-log.ts";
export { type InboxMessage, InboxMessageSchema, type SendReply, sendMessage, type TakeReply, takeMessages } from "./inbox.ts";
export { INPUT_PREVIEW_CHARS, inputPreviewOf } from "./input-preview.ts";
export type { ListTasksOptions, TaskPage } from "./listing.ts";
export { clearHandoffs, listQueues, readAttempt, readCancelRequests, readCreatedSince, readFields, readHandoffs, readRunning } from "./readers.ts";
export { parseTaskRecord, RECORD_FIELDS, type RecordField, TaskRecordSchema, type TaskResult } from "./record.ts";
export type { FinishInput, FinishOutcome, RunnableTask, SettleInput, StartReply } from "./replies.ts";
export { taskSignature, verifyTaskSignature } from "./signing.ts";
export { type QueueStats, readQueueStats } from "./stats.ts";
export { newSubmitId } from "./submit-id.ts";
export { type NewTask, TaskStore } from "./task-store.ts";
