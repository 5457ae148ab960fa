// @flotilla/temporal: durable agent runs. `temporalExecutor` for the Flotilla worker, and
// `createTemporalWorker` for the process that serves the workflow; the rest is for building your
// own Temporal worker around Flotilla's workflow and activities.
export { type ActivityOptions, createActivities, type FlotillaActivities } from "./activities.ts";
export { type TemporalExecutorOptions, temporalExecutor } from "./executor.ts";
export { createTemporalWorker, type TemporalWorker, type TemporalWorkerOptions, webpackConfigHook, workflowsPath } from "./temporal-worker.ts";
export type { ActivitySettings, AgentWorkflowInput, RunResultJson, TaskRetry } from "./types.ts";
