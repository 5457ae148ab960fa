export type { DeadLetter } from "@flotilla/broker";
export type { CancelOutcome } from "@flotilla/cancel";
export {
  type AgentResult,
  ConnectionError,
  DeadLetterNotFoundError,
  DuplicateTaskError,
  ErrorCodes,
  FlotillaError,
  type JsonValue,
  LifecycleError,
  NotRunningError,
  NotWaitingError,
  type ResultOf,
  type SubmitOptions,
  TaskCancelledError,
  TaskFailedError,
  TaskNotFoundError,
  type TaskStatus,
  UnrecoverableError,
  ValidationError,
  WaitTimeoutError,
} from "@flotilla/core";
export type { FlotillaEvent } from "@flotilla/events";
export { type FleetStatus, type FleetStatusOptions, type NotReady, WorkerRecordSchema, type WorkerState, type WorkerStatus } from "@flotilla/health";
export {
  type AlertEvent,
  type AlertManager,
  type AlertRule,
  type AlertSink,
  type AlertThresholds,
  defaultRules,
  logSink,
  webhookSink,
} from "@flotilla/metrics";
export type { ScheduleInfo } from "@flotilla/schedules";
export type { ListTasksOptions, TaskPage, TaskResult } from "@flotilla/store";
export { FlotillaClient } from "./client.ts";
export type { Conversation, ConversationsClient } from "./conversations-client.ts";
export type { DeadLettersClient } from "./dead-letters-client.ts";
export { closeDefaultClient, type DistributedOptions, defaultFlotillaClient, distributed } from "./distributed.ts";
export type { FleetClient, QueueDepth, QueueOverview, RunAlertsOptions } from "./fleet-client.ts";
export { FleetWatch, type WatchEvent, type WatchOptions, WatchOptionsSchema } from "./fleet-watch.ts";
export type { ClientOptions } from "./options.ts";
export type { CreateScheduleOptions, ScheduledTaskOptions, SchedulesClient } from "./schedules-client.ts";
export { type AgentLike, prepareSubmission, type Submission, type SubmissionLimits } from "./submission.ts";
export { type ResultOptions, type StreamOptions, TaskHandle } from "./task-handle.ts";
export { type OnUnserved, UNSERVED_AFTER_MS, type UnservedNotice } from "./unserved.ts";
