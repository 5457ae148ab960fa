import { laneOf } from "@flotilla/broker";
import {
  type Backoff,
  BackoffSchema,
  type Priority,
  parseJsonOr,
  type TaskError,
  TaskErrorSchema,
  type TaskStatus,
  TaskStatusSchema,
  type TokenUsage,
  taskIdOf,
  type WaitRequest,
} from "@flotilla/core";
import { decodeRow, RUN_REPLY_FIELDS, type RUN_REPLY_OPTIONAL } from "./script-fields.ts";

/** What a worker needs to run a started task. */
export interface RunnableTask {
  attempt: number;
  /** JSON of `{ agent, input }`, to be validated by the caller. */
  payload: string;
  timeoutMs: number | undefined;
  detailed: boolean;
  /** JSON object given at submit. */
  metadata: string;
  /** The agent's name as recorded at submit. */
  agent: string;
  retries: number;
  maxRetries: number;
  backoff: Backoff | undefined;
  /** How long the task had waited since it was created, in ms. */
  waitedMs: number;
  /** The submit's trace context (JSON), if it was traced. */
  trace: string | undefined;
  /** JSON of the state its run saved when it stopped to wait for a signal: this attempt resumes it. */
  resume: string | undefined;
  /** JSON of the signal that resumed it (none with `resume`: the wait timed out). */
  signal: string | undefined;
  /** Its creator's signature (hex HMAC-SHA256), if it was signed. */
  signature: string | undefined;
  /** Messages waiting in its inbox as it starts (sent before it ran, or while it waited): its first turn takes them. */
  messagesWaiting: number;
}

interface EntryRef {
  priority: Priority;
  entryId: string;
}

/** What starting one claimed entry came to. Skipped entries were settled by the script already. */
export type StartReply = EntryRef &
  (
    | ({ kind: "run"; taskId: string } & RunnableTask)
    | { kind: "skip"; taskId: string; reason: "terminal" | "running" | "cancelled" | "parked"; status: TaskStatus | undefined }
    | { kind: "missing"; taskId: string }
    /** The record cannot be trusted (written by a buggy or hostile producer): nothing was written; `reason` says which field. */
    | { kind: "corrupt"; taskId: string; reason: string }
    /** Past its delivery limit: the script ended it FAILED (DELIVERY_LIMIT) and dead-lettered its entry, with `reason`. */
    | { kind: "dead"; taskId: string; attempts: number; lastError: TaskError | undefined; reason: string }
    | { kind: "malformed"; fields: Record<string, string> | null }
  );

export interface FinishInput {
  attempt: number;
  status: "COMPLETED" | "FAILED" | "CANCELLED" | "RETRYING" | "WAITING";
  agent: string;
  result?: unknown;
  error?: TaskError | undefined;
  /** With RETRYING: when the next attempt is due. With WAITING: when the wait times out (none: it waits as long as it takes). */
  retryAt?: number | undefined;
  /** With WAITING: the signal it waits for (shown on its record and its `waiting` event). */
  waiting?: WaitRequest | undefined;
  /** With WAITING: the run's saved state (JSON), given back to the attempt that resumes it. */
  resume?: unknown;
  /** With RETRYING: the task is handed back unfinished (worker shutdown) and uses up no retry. */
  release?: boolean | undefined;
  /** The attempt's token totals, kept on the record. */
  usage?: TokenUsage | undefined;
}

/** An attempt's outcome with the queue entry to settle: acknowledged, delayed for a retry, or dead-lettered. */
export interface SettleInput extends FinishInput {
  taskId: string;
  priority: Priority;
  /** "" when there is no entry to settle. */
  entryId: string;
  /** With FAILED: the dead letter's reason. */
  deadReason?: string | undefined;
}

export type FinishOutcome =
  | { ok: true; status: TaskStatus; deadLettered: boolean }
  | { ok: false; reason: "missing" | "terminal" | "stale"; status: TaskStatus | undefined }
  /** The record cannot be trusted: nothing was written and the entry is still held; `detail` says which field. */
  | { ok: false; reason: "corrupt"; status: undefined; detail: string };

export const optStatus = (s: unknown): TaskStatus | undefined => {
  const parsed = TaskStatusSchema.safeParse(s);
  return parsed.success ? parsed.data : undefined;
};

function parseBackoff(text: string): Backoff | undefined {
  if (!text) return undefined;
  const parsed = BackoffSchema.safeParse(parseJsonOr(text, null));
  return parsed.success ? parsed.data : undefined;
}

function parseRun(queue: string, r: readonly unknown[]): StartReply {
  const f = decodeRow(RUN_REPLY_FIELDS, r, 1);
  // Then the fields the record holds, by name (RUN_REPLY_OPTIONAL).
  const o: Partial<Record<(typeof RUN_REPLY_OPTIONAL)[number], string>> = {};
  for (let i = 1 + RUN_REPLY_FIELDS.length; i + 1 < r.length; i += 2) o[String(r[i]) as keyof typeof o] = String(r[i + 1]);
  return {
    kind: "run",
    priority: laneOf(f.lane),
    entryId: f.entryId,
    taskId: taskIdOf(queue, f.name),
    attempt: Number(f.attempt),
    payload: f.payload,
    timeoutMs: o.timeoutMs ? Number(o.timeoutMs) : undefined,
    detailed: o.detailed === "1",
    metadata: o.metadata || "{}",
    agent: f.agent,
    retries: Number(o.retries || 0),
    maxRetries: Number(o.maxRetries || 0),
    backoff: parseBackoff(o.backoff ?? ""),
    waitedMs: Number(f.waitedMs || 0),
    trace: o.trace || undefined,
    resume: o.resume || undefined,
    signal: o.signal || undefined,
    signature: o.signature || undefined,
    messagesWaiting: Number(o.inbox || 0),
  };
}

/** Reads the replies of the start, claim and settle scripts (see includes/startEntry.lua). */
export function parseStartReplies(queue: string, reply: unknown): StartReply[] {
  return (reply as unknown[][]).map((r) => {
    if (r[0] === "run") return parseRun(queue, r);
    const priority = laneOf(r[1]);
    const entryId = String(r[2]);
    const taskId = taskIdOf(queue, String(r[3] ?? ""));
    switch (r[0]) {
      case "skip":
        return { kind: "skip", priority, entryId, taskId, reason: r[4] as "terminal", status: optStatus(r[5]) };
      case "dead": {
        const lastError = TaskErrorSchema.safeParse(parseJsonOr(r[5] as string, null));
        return {
          kind: "dead",
          priority,
          entryId,
          taskId,
          attempts: Number(r[4]),
          lastError: lastError.success ? lastError.data : undefined,
          reason: String(r[6] ?? ""),
        };
      }
      case "missing":
        return { kind: "missing", priority, entryId, taskId };
      case "corrupt":
        return { kind: "corrupt", priority, entryId, taskId, reason: String(r[4] ?? "") };
      default: {
        const pairs = r.slice(3).map(String);
        const fields: Record<string, string> = {};
        for (let i = 0; i + 1 < pairs.length; i += 2) fields[pairs[i]!] = pairs[i + 1]!;
        return { kind: "malformed", priority, entryId, fields: pairs.length ? fields : null };
      }
    }
  });
}

/** Reads one outcome of settle-12.lua. */
export function parseFinish(reply: unknown): FinishOutcome {
  const r = reply as unknown[];
  if (r[0] === "ok") return { ok: true, status: optStatus(r[1])!, deadLettered: Number(r[2]) === 1 };
  if (r[1] === "corrupt") return { ok: false, reason: "corrupt", status: undefined, detail: String(r[2] ?? "") };
  return { ok: false, reason: r[1] as "stale", status: optStatus(r[2]) };
}
