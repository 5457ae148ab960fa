// The shapes of the gateway's answers the dashboard reads, by name. Each is a schema of the gateway's
// OpenAPI document, generated into ./generated/openapi.ts (`pnpm --filter @flotilla/dashboard
// gen:types`; a test fails when that file is stale), so they cannot drift from what the gateway sends.
import type { components } from "./generated/openapi.ts";

type Schemas = components["schemas"];

export type Task = Schemas["Task"];
export type TaskStatus = Task["status"];
export type TaskError = Schemas["TaskError"];
/** What a WAITING task waits for: an approval of a tool call, a signal, or a rate limit. */
export type Waiting = NonNullable<Task["waiting"]>;
/** One message of a task's event stream (`GET /v1/tasks/{id}/events`). */
export type TaskEvent = Schemas["TaskEvent"];
export type QueueOverview = Schemas["QueueOverview"];
export type WorkerInfo = Schemas["Worker"];
export type WorkerState = NonNullable<WorkerInfo["state"]>;
export type NotReady = NonNullable<WorkerInfo["reasons"]>[number];
export type Workers = Schemas["Workers"];
export type Alert = Schemas["Alert"];
export type DeadLetter = Schemas["DeadLetter"];
export type RunSummary = Schemas["RunSummary"];
export type RunPage = Schemas["RunPage"];
export type RunNode = Schemas["NodeInstance"];
/** A run with the graph it was started with (`definition`: its nodes' `next` are the edges). */
export type RunDetail = Schemas["GraphRun"];
/** What `POST /v1/runs/{runId}/cancel` answers: `cancelled`, or `finished` (it had ended; `status` says how). */
export type RunCancelOutcome = Schemas["RunCancelOutcome"];
/** What `POST /v1/runs/{runId}/retry` answers: the run runs again. */
export type RunRetried = Schemas["RunRetried"];
/** One message of `GET /v1/events`: the fleet's lifecycle, as it happens (no replay). */
export type LiveEvent = Schemas["FleetEvent"];
/** A bus subscription (its consumer group on a topic), as `GET /v1/topics` shows it. */
export type BusSubscription = Schemas["BusSubscription"];
export type TopicStats = Schemas["TopicStats"];
/** An entry of a topic: an event, or one the bus cannot read (`malformed` says why). */
export type BusEvent = Schemas["BusEvent"] | Schemas["MalformedBusEvent"];
export type BusDeadLetter = Schemas["BusDeadLetter"];

/** Every status, in the order a task goes through them (the status filter's order); the record fails to compile when the API adds one. */
const STATUS_ORDER: Record<TaskStatus, number> = { PENDING: 0, RUNNING: 1, WAITING: 2, RETRYING: 3, COMPLETED: 4, FAILED: 5, CANCELLED: 6 };
export const TASK_STATUSES = (Object.keys(STATUS_ORDER) as TaskStatus[]).sort((a, b) => STATUS_ORDER[a] - STATUS_ORDER[b]);
export const isTerminal = (s: string | undefined): boolean => s === "COMPLETED" || s === "FAILED" || s === "CANCELLED";
