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
}
