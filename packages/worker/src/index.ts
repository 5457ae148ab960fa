// Thrown from a tool, a model or an executor to fail the task at once: re-exported so a worker needs no @flotilla/core.
export { UnrecoverableError } from "@flotilla/core";
export { AbortReason } from "./abort-reason.ts";
export { type AgentExecutorOptions, agentExecutor } from "./agent-executor.ts";
export type { DeadLetteredEvent, TaskEndEvent, WorkerEvents } from "./events.ts";
export type { ExecutionContext, Executor } from "./executor.ts";
export { jsonLogger, type LogFields, type Logger, silentLogger } from "./logger.ts";
export { defaultWorkerId, type ResolvedWorkerOptions, resolveWorkerOptions, type StopOptions, type WorkerOptions } from "./options.ts";
export type { NotReadyReason, ReadinessState } from "./readiness.ts";
export { Worker } from "./worker.ts";
