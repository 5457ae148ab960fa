import {
  CorruptRecordError,
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
  inputPreview: "the first characters of its input on one line, for task lists (see inputPreviewOf); absent when the input is null or the submitter keeps none",
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
  inbox: "how many messages wait in its inbox (sent to it: sendMessage-2.lua), absent when none; each publish reply says it",
  lastTake: "id of the last take of its inbox (`<attempt>:<n>`): a resent take returns the same messages",
  lastTaken: "JSON array of the messages the last take returned, for a resend of it",
  // Its events (written by the status-event and event-log includes).
  seq: "the number of its last event: every event gets the next, so a task's events have no gap",
  log: "its status events, comma-joined JSON (it has an event stream only for its other events)",
  lastBatch: "id of the last event batch written (`<attempt>:<n>`): a resent batch is not written again",
  "hw:<scope>": "high-water mark of a named event scope: a retried producer's events already published are dropped",
  // Once it completed (written by the settle script: see lua/includes/packRecord.lua).
  z: "a COMPLETED task's fields packed into one JSON object, beside status, attempt and handoff; the readers here unpack it",
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
  /** The first characters of its input on one line (a string input as it is, else its JSON), for lists. */
  inputPreview: z.string().optional(),
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

/** The field a completed task's record packs its other fields into (see lua/includes/packRecord.lua). */
export const PACKED_FIELD = "z";

/**
 * The short names a packed record's members go by (lua/includes/packRecord.lua's PACK_NAMES; a test
 * checks the two agree). A field without one keeps its own name.
 */
export const PACKED_NAMES: Readonly<Record<string, string>> = {
  agent: "a",
  createdAt: "c",
  startedAt: "b",
  waitMs: "w",
  workerId: "k",
  result: "r",
  usage: "u",
  metadata: "m",
  maxRetries: "x",
  maxDeliveries: "y",
  retries: "n",
  timeoutMs: "o",
  runAt: "ra",
  priority: "p",
  detailed: "dt",
  submitId: "s",
  log: "l",
  cancelRequestedAt: "cr",
  cancelReason: "cn",
  concurrencyKey: "ck",
  concurrencyLimit: "cl",
  inputPreview: "ip",
};
const LONG_NAMES = new Map(Object.entries(PACKED_NAMES).map(([long, short]) => [short, long]));
/** The fields packed as the JSON they hold (packRecord.lua's PACK_JSON): a JSON string among them is a value, not text. */
export const PACKED_JSON: ReadonlySet<string> = new Set(["result", "usage", "metadata"]);

/**
 * The stored text of each field of a packed record's `z`, under its own name: a JSON-valued field
 * re-serialized, a bare number as its digits, the status log as its comma-joined events; what
 * packing leaves out because the rest tells it (task id, queue, seq, completedAt, durationMs) put back.
 */
export function unpackFields(packed: string, taskId: string): Record<string, string> {
  let members: unknown;
  try {
    members = JSON.parse(packed);
  } catch {
    throw new CorruptRecordError(`task record ${taskId}`, "z: not JSON");
  }
  if (typeof members !== "object" || members === null || Array.isArray(members)) throw new CorruptRecordError(`task record ${taskId}`, "z: not an object");
  const out: Record<string, string> = {};
  // The status log's last event: the completed one, written in the same call as the packing.
  let last: { seq?: unknown; status?: unknown; ts?: unknown } | undefined;
  for (const [member, value] of Object.entries(members)) {
    const name = LONG_NAMES.get(member) ?? member;
    if (PACKED_JSON.has(name)) out[name] = JSON.stringify(value);
    else if (typeof value === "string") out[name] = value;
    else if (name === "log" && Array.isArray(value)) {
      out.log = value.map((event) => JSON.stringify(event)).join(",");
      last = value.at(-1) as typeof last;
    } else out[name] = JSON.stringify(value);
  }
  // What packing leaves out because the rest tells it (see packRecord.lua).
  out.taskId = taskId;
  out.queue = taskId.slice(0, taskId.indexOf("/"));
  if (typeof last?.seq === "number") out.seq = String(last.seq);
  if (last?.status === "completed" && typeof last.ts === "number") {
    out.completedAt = String(last.ts);
    out.durationMs = String(last.ts - Number(out.startedAt ?? last.ts));
  }
  return out;
}

/**
 * HMGET values of `fields` followed by the packed field (ask for `[...fields, PACKED_FIELD]`), as the
 * values of `fields` alone: a completed task's are taken from its packed field.
 */
export function unpackValues(fields: readonly string[], values: ReadonlyArray<string | null | undefined>, taskId: string): Array<string | null> {
  const packed = values[fields.length];
  const unpacked = packed ? unpackFields(packed, taskId) : undefined;
  return fields.map((field, i) => values[i] ?? unpacked?.[field] ?? null);
}

/** Turns a Redis hash reply into a TaskResult, or undefined when the record does not exist. */
export function parseTaskRecord(hash: Readonly<Record<string, string>>, taskId: string): TaskResult | undefined {
  if (!hash || Object.keys(hash).length === 0) return undefined;
  const packed = hash[PACKED_FIELD];
  return parseStored(TaskRecordSchema, packed ? { ...unpackFields(packed, taskId), ...hash } : hash, `task record ${taskId}`);
}

/** The public view's fields and the packed one: what `recordFromValues` takes, in this order. */
export const READ_FIELDS = [...PUBLIC_FIELDS, PACKED_FIELD];

/** The same, from HMGET values of READ_FIELDS. */
export function recordFromValues(values: ReadonlyArray<string | null | undefined>, taskId: string): TaskResult | undefined {
  const hash: Record<string, string> = {};
  const all = unpackValues(PUBLIC_FIELDS, values, taskId);
  for (let i = 0; i < PUBLIC_FIELDS.length; i++) {
    const v = all[i];
    if (v !== null && v !== undefined) hash[PUBLIC_FIELDS[i]!] = v;
  }
  return parseTaskRecord(hash, taskId);
}
