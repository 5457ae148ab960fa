import {
  JsonValueSchema,
  PrioritySchema,
  parseStored,
  QueueNameSchema,
  TaskErrorSchema,
  TaskIdSchema,
  TaskStatusSchema,
  TokenUsageSchema,
  WaitRequestSchema,
} from "@flotilla/core";
import { z } from "zod";

/**
 * Every field of a task record (`{prefix}:task:{<queue>}:<name>`, a hash), in one place. The store
 * owns them: only its Lua includes and this package's code write them, and other packages read
 * them through the readers it exports. A test checks that the store's scripts name no other field.
 */
export const RECORD_FIELDS = {
  // What the task is (written once, at submit).
  taskId: "`<queue>/<name>`",
  queue: "the queue it was submitted to",
  agent: "the agent's (or swarm's) name, stamped on every event",
  payload: "JSON of `{ agent, input }` (a graph node's: `{ node, input, state }`); read only by the worker that starts the task",
  createdAt: "submit time (ms)",
  detailed: '"1" when every event type is kept, else only status, text and progress (stored only when "1")',
  maxRetries: "retries allowed after a failed attempt",
  maxDeliveries: "attempts started at most, counting crash reclaims",
  timeoutMs: "per-attempt timeout",
  metadata: "JSON object given at submit",
  backoff: "JSON of the task's own retry backoff",
  runAt: "when a delayed task falls due (ms)",
  priority: "its lane when not normal: high | low",
  submitId: "set for a caller-chosen id, so a resent create is not taken for a duplicate",
  trace: "W3C trace context of the submit (JSON carrier), continued by the worker",
  handoff: '"1" on a graph node task: the script that ends it notes it in its queue\'s hand-off set (see includes/noteHandoff.lua)',
  concurrencyKey: "its concurrency key: at most concurrencyLimit of the queue's tasks with it run at once",
  concurrencyLimit: "how many tasks of its concurrency key may run at once",
  signature: "its creator's HMAC-SHA256 of its id, payload and metadata (signed tasks: see signing.ts); workers that verify refuse a task without a good one",
  // Where it is (written by the start, settle, cancel and requeue scripts).
  status: "PENDING | RUNNING | RETRYING | WAITING | COMPLETED | FAILED | CANCELLED",
  attempt: "the current attempt's number: every start adds one, and fences the attempts before it",
  workerId: "the worker running (or that last ran) it",
  entryId: "the queue entry the current attempt runs from",
  startedAt: "when the current attempt started (ms)",
  waitMs: "how long it waited before it first started",
  retries: "retries used so far",
  retryAt: "when the next attempt is due (RETRYING)",
  deliveriesBase: "attempts made before a requeue from the dead letters (the delivery limit counts from here)",
  completedAt: "when it ended (ms)",
  durationMs: "how long its last attempt ran",
  result: "JSON of what it returned (COMPLETED)",
  error: "JSON `{ message, code }` of why it ended otherwise",
  usage: "JSON token totals of the attempt that ended it",
  cancelRequestedAt: "when a cancel was requested (ms): a worker that claims it later never runs it",
  cancelReason: "the cancel's reason",
  parked: "the lane it goes back to, while it waits for a slot of its concurrency key (no entry in any lane meanwhile)",
  parkedAt: "when it was first parked (ms): parked again, it keeps its place at the front of its key's waiting tasks",
  waiting: "JSON of the signal a WAITING task waits for (see WaitRequestSchema); cleared when it resumes",
  resume: "JSON of the state its run saved when it stopped to wait (read by the worker that resumes it; cleared when it ends)",
  signal: "JSON `{ name, payload, at }` of the signal that resumed it (cleared when it ends or waits again)",
  // Its events (written by the status-event and event-log includes).
  seq: "the number of its last event: every event gets the next, so a task's events have no gap",
  log: "its status events, comma-joined JSON (it has an event stream only for its other events)",
  lastBatch: "id of the last event batch written (`<attempt>:<n>`): a resent batch is not written again",
  "hw:<scope>": "high-water mark of a named event scope: a retried producer's events already published are dropped",
} as const;

export type RecordField = keyof typeof RECORD_FIELDS;

const jsonText = z.string().transform((text, ctx) => {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    ctx.addIssue({ code: "custom", message: "not JSON" });
    return z.NEVER;
  }
});
const num = z.coerce.number().int();

/** A task record as Redis stores it (every field a string), parsed back into its public view. */
export const TaskRecordSchema = z.object({
  taskId: TaskIdSchema,
  queue: QueueNameSchema,
  status: TaskStatusSchema,
  agent: z.string(),
  attempt: num.min(0).default(0),
  workerId: z.string().optional(),
  createdAt: num,
  startedAt: num.optional(),
  completedAt: num.optional(),
  result: jsonText.pipe(JsonValueSchema).optional(),
  error: jsonText.pipe(TaskErrorSchema).optional(),
  retries: num.min(0).default(0),
  maxRetries: num.min(0).default(0),
  maxDeliveries: num.min(0).default(0),
  retryAt: num.optional(),
  runAt: num.optional(),
  priority: PrioritySchema.default("normal"),
  timeoutMs: num.optional(),
  detailed: z
    .enum(["0", "1"])
    .default("0")
    .transform((v) => v === "1"),
  metadata: jsonText.pipe(z.record(z.string(), JsonValueSchema)).default({}),
  cancelRequestedAt: num.optional(),
  cancelReason: z.string().optional(),
  waitMs: num.optional(),
  durationMs: num.optional(),
  seq: num.min(0).default(0),
  /** Token totals of the attempt that ended the task. */
  usage: jsonText.pipe(TokenUsageSchema).optional(),
  /** Its concurrency key and that key's limit (see `concurrencyKey` on submit). */
  concurrencyKey: z.string().optional(),
  concurrencyLimit: num.min(1).optional(),
  /** true while it waits, parked, for a slot of its concurrency key (stored: the lane it goes back to). */
  parked: z
    .enum(["1", "2", "3"])
    .optional()
    .transform((lane) => (lane === undefined ? undefined : true)),
  /** While WAITING: the signal it waits for, for which tool call, until when (see `handle.signal`). */
  waiting: jsonText.pipe(WaitRequestSchema).optional(),
});
/** The public view of a task: `handle.status()` and `client.listTasks()` return these. */
export type TaskResult = z.infer<typeof TaskRecordSchema>;

/** The fields the public view reads back (never the payload: only the worker that starts a task reads it). */
export const PUBLIC_FIELDS = Object.keys(TaskRecordSchema.shape) as RecordField[];

/** Turns a Redis hash reply into a TaskResult, or undefined when the record does not exist. */
export function parseTaskRecord(hash: Readonly<Record<string, string>>, taskId: string): TaskResult | undefined {
  if (!hash || Object.keys(hash).length === 0) return undefined;
  return parseStored(TaskRecordSchema, hash, `task record ${taskId}`);
}

/** The same, from HMGET values of PUBLIC_FIELDS. */
export function recordFromValues(values: ReadonlyArray<string | null | undefined>, taskId: string): TaskResult | undefined {
  const hash: Record<string, string> = {};
  for (let i = 0; i < PUBLIC_FIELDS.length; i++) {
    const v = values[i];
    if (v !== null && v !== undefined) hash[PUBLIC_FIELDS[i]!] = v;
  }
  return parseTaskRecord(hash, taskId);
}
