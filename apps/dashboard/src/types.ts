// The shapes of the gateway's answers, as far as the dashboard reads them.

export type TaskStatus = "PENDING" | "RUNNING" | "COMPLETED" | "FAILED" | "CANCELLED" | "RETRYING" | "WAITING";
export const TASK_STATUSES: readonly TaskStatus[] = ["PENDING", "RUNNING", "WAITING", "RETRYING", "COMPLETED", "FAILED", "CANCELLED"];
export const isTerminal = (s: string | undefined): boolean => s === "COMPLETED" || s === "FAILED" || s === "CANCELLED";

export interface QueueOverview {
  queue: string;
  waiting: number;
  lanes: Record<string, number>;
  inFlight: number;
  delayed: number;
  dead: number;
  oldestWaitMs: number;
  recent: { completed: number; failed: number; cancelled: number; retried: number; windowMs: number };
  waitP95Ms?: number;
}

export interface WorkerInfo {
  workerId: string;
  hostname?: string;
  pid?: number;
  queues?: string[];
  concurrency?: number;
  running?: string[];
  completed?: number;
  failed?: number;
  startedAt?: number;
  lastBeat: number;
  alive: boolean;
  /** Absent from workers that predate it. */
  state?: WorkerState;
  /** Why it is not ready (when not-ready, or starting/draining with a cause). */
  reasons?: NotReady[];
  /** The @flotilla/worker version it runs, and the application's build id. */
  version?: string;
  buildId?: string;
}

export type WorkerState = "starting" | "running" | "draining" | "not-ready";

export interface NotReady {
  reason: string;
  detail: string;
  /** ms, on the worker's clock. */
  since: number;
}

export interface Workers {
  workers: WorkerInfo[];
  live: number;
  dead: number;
  running: number;
  at: number;
}

export interface Alert {
  id: string;
  rule: string;
  severity: "warning" | "critical";
  state: "firing" | "resolved";
  queue: string;
  message: string;
  value: number;
  threshold: number;
  since: number;
  at: number;
}

export interface TaskError {
  message: string;
  code: string;
}

export interface Task {
  taskId: string;
  queue: string;
  status: TaskStatus;
  agent: string;
  attempt: number;
  workerId?: string;
  createdAt: number;
  startedAt?: number;
  completedAt?: number;
  result?: unknown;
  error?: TaskError;
  retries: number;
  maxRetries: number;
  priority: string;
  seq: number;
  /** What a WAITING task waits for: an approval of a tool call, a signal, or a rate limit. */
  waiting?: Waiting;
}

export interface Waiting {
  name: string;
  kind: "approval" | "signal" | "rate-limit";
  tool?: string;
  args?: unknown;
  request?: unknown;
  timeoutAt?: number;
}

export interface TaskEvent {
  taskId: string;
  seq: number;
  type: string;
  attempt?: number;
  ts: number;
  status?: string;
  delta?: string;
  toolCallId?: string;
  name?: string;
  args?: unknown;
  result?: unknown;
  isError?: boolean;
  message?: string;
  code?: string;
  error?: TaskError;
  workerId?: string;
}

export interface DeadLetter {
  id: string;
  queue: string;
  priority: string;
  entryId: string;
  taskId?: string;
  reason: string;
  fields: Record<string, string> | null;
  at: number;
  extra: Record<string, unknown>;
}

export interface RunSummary {
  runId: string;
  graph: string;
  status: string;
  createdAt: number;
  endedAt?: number;
  error?: { message: string; code: string; node?: string };
}

export interface RunNode {
  node: string;
  branch: number[];
  n: number;
  instance: string;
  status: string;
  taskId: string;
  output?: unknown;
  error?: unknown;
}

export interface RunDetail extends RunSummary {
  nodes: RunNode[];
  /**
   * The graph the run was started with (@flotilla/graph's Graph), when the gateway includes it: its
   * nodes' `next` are the edges. Today's gateway does not (see run-topology.ts).
   */
  /** The graph the run was started with. */
  definition?: { nodes: Array<{ id: string; type?: string; next?: string[] }> };
}

/** One message of `GET /v1/events`: the fleet's lifecycle, as it happens (no replay). */
export type LiveEvent =
  | { type: "task.submitted"; queue: string; taskId: string; at: number }
  | { type: "task.started"; queue: string; taskId: string; attempt: number; workerId?: string; at: number }
  | { type: "task.finished"; queue: string; taskId: string; status: "COMPLETED" | "FAILED" | "CANCELLED"; attempt: number; error?: TaskError; at: number }
  | { type: "task.status"; queue: string; taskId: string; status: TaskStatus; attempt: number; at: number }
  | { type: "worker.joined"; workerId: string; hostname?: string; queues: string[]; state?: WorkerState; at: number }
  | { type: "worker.left"; workerId: string; reason: "stopped" | "dead"; at: number }
  | { type: "worker.state"; workerId: string; state: WorkerState; reasons: NotReady[]; at: number }
  | { type: "run.started"; runId: string; graph: string; at: number }
  | { type: "run.finished"; runId: string; graph: string; status: string; at: number }
  | { type: "watch.lagged"; dropped: number; at: number };

/** A bus subscription (its consumer group on a topic), as `GET /v1/topics` shows it. */
export interface BusSubscription {
  name: string;
  consumers: number;
  pending: number;
  /** Events not yet delivered to it; null when Redis cannot tell. */
  lag: number | null;
  lastDeliveredId: string;
  retrying: number;
  deadLetters: number;
  counts: { delivered: number; acked: number; retried: number; reclaimed: number; dead: number };
}

export interface TopicStats {
  topic: string;
  /** Events the stream holds now. */
  length: number;
  published: number;
  groups: BusSubscription[];
}

/** An entry of a topic: an event, or one the bus cannot read (`malformed` says why). */
export type BusEvent =
  | {
      id: string;
      topic: string;
      payload: unknown;
      publishedAt: number;
      correlationId?: string;
      causationId?: string;
      source?: string;
      headers: Record<string, string>;
    }
  | { id: string; topic: string; publishedAt: number; malformed: string; fields: Record<string, string> };

export interface BusDeadLetter {
  id: string;
  eventId: string;
  topic: string;
  subscription: string;
  reason: string;
  /** Deliveries made. */
  attempts: number;
  error?: TaskError;
  failedAt: number;
  event?: { payload: unknown };
  raw: Record<string, string>;
}
