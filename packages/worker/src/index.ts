// Thrown from a tool, a model or an executor to fail the task at once: re-exported so a worker needs no @flotilla/core.
/** Re-exported from core, where executors in other packages reach it. */
export { AbortReason, UnrecoverableError } from "@flotilla/core";
export { type AgentExecutorOptions, agentExecutor } from "./agent-executor.ts";
export type { DeadLetteredEvent, TaskEndEvent, WorkerEvents } from "./events.ts";
export type { ExecutionContext, Executor, NodeExecutionContext, NodeExecutor, NodeExecutorStart } from "./executor.ts";
// How often runs are checked against their lease: Temporal mode's activities check theirs as often.
export { fenceCheckMs } from "./lease-keeper.ts";
export { jsonLogger, type LogFields, type Logger, silentLogger } from "./logger.ts";
export { defaultWorkerId, type ResolvedWorkerOptions, resolveWorkerOptions, type StopOptions, type WorkerOptions } from "./options.ts";
export type { NotReadyReason, ReadinessState } from "./readiness.ts";
export type { SubscriptionRunner, SubscriptionRunnerStart } from "./subscriptions.ts";
export { Worker } from "./worker.ts";
