export type { CancelOutcome } from "@flotilla/cancel";
export {
  ConnectionError,
  DuplicateTaskError,
  ErrorCodes,
  FlotillaError,
  type JsonValue,
  type SubmitOptions,
  TaskCancelledError,
  TaskFailedError,
  TaskNotFoundError,
  type TaskStatus,
  ValidationError,
  WaitTimeoutError,
} from "@flotilla/core";
export type { FlotillaEvent } from "@flotilla/events";
export type { FleetStatus, WorkerStatus } from "@flotilla/health";
export type { TaskPage, TaskResult } from "@flotilla/store";
export * from "./client.ts";
export * from "./distributed.ts";
export * from "./task-handle.ts";
