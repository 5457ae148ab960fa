export { decodeCursor, encodeCursor, type Position } from "./cursor.ts";
export {
  type AppendEvents,
  appendEvents,
  installEventLog,
  readTaskLog,
  readTaskLogPage,
  subscribeStatus,
  subscribeTaskEvents,
  type TaskLog,
} from "./event-log.ts";
export type { ListTasksOptions, TaskPage } from "./listing.ts";
export { type RecordField, RECORD_FIELDS, parseTaskRecord, TaskRecordSchema, type TaskResult } from "./record.ts";
export { listQueues, readAttempt, readCancelRequests } from "./readers.ts";
export type { FinishInput, FinishOutcome, RunnableTask, SettleInput, StartReply } from "./replies.ts";
export { type QueueStats, readQueueStats } from "./stats.ts";
export { type NewTask, TaskStore } from "./task-store.ts";
