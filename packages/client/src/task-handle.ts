import { type CancelOutcome, requestCancel } from "@flotilla/cancel";
import {
  type AgentResult,
  ConnectionError,
  checkJson,
  checkJsonDepth,
  DEFAULTS,
  DeadLetterNotFoundError,
  isTerminal,
  type JsonValue,
  JsonValueSchema,
  NotRunningError,
  NotWaitingError,
  newId,
  parseInput,
  SignalNameSchema,
  splitTaskId,
  TaskCancelledError,
  TaskFailedError,
  TaskNotFoundError,
  ValidationError,
  WaitTimeoutError,
} from "@flotilla/core";
import { withRedis } from "@flotilla/core/redis";
import { type FlotillaEvent, isTerminalEvent, type StatusEvent, streamEvents } from "@flotilla/events";
import { sendMessage, type TaskResult } from "@flotilla/store";
import { z } from "zod";
import type { ClientContext } from "./context.ts";
import { checkServed, type OnUnserved, type ServedCheck } from "./unserved.ts";

/** A task still running is read again this often while its end is awaited (see result()). */
export const RECHECK_MS = 5000;

export interface ResultOptions {
  /** Give up (WaitTimeoutError) after this long. @default no limit */
  timeoutMs?: number;
  signal?: AbortSignal;
  /**
   * Told once when the task still waits `UNSERVED_AFTER_MS` (2 s) after the call and no live worker
   * serves its queue; the wait goes on (a worker that starts later runs it). @default none: nothing is checked
   */
  onUnserved?: OnUnserved;
}

export interface StreamOptions {
  /** Resume after this seq (the last one you saw). @default 0: from the first event */
  after?: number;
  signal?: AbortSignal;
  /** As `result()`'s: told once when no live worker serves the task's queue; the stream goes on. @default none */
  onUnserved?: OnUnserved;
}

const isFunction = (v: unknown): v is (...args: never[]) => unknown => typeof v === "function";
// Duck-typed: an AbortSignal of another realm (a test runner's, a polyfill's) is one too.
const SignalSchema = z.custom<AbortSignal>(
  (v) => typeof v === "object" && v !== null && typeof (v as AbortSignal).aborted === "boolean" && isFunction((v as AbortSignal).addEventListener),
  "expected an AbortSignal",
);
const OnUnservedSchema = z.custom<OnUnserved>(isFunction, "expected a function");
const ResultOptionsSchema = z
  .object({ timeoutMs: z.number().min(0).optional(), signal: SignalSchema.optional(), onUnserved: OnUnservedSchema.optional() })
  .strict();
const StreamOptionsSchema = z
  .object({ after: z.number().min(0).optional(), signal: SignalSchema.optional(), onUnserved: OnUnservedSchema.optional() })
  .strict();

/**
 * A submitted task: read its status, await its result, stream its events, cancel it. `R` is what
 * `result()` resolves with: an AgentResult typed by the submitted agent's output schema. It is a
 * promise of types only — nothing is checked at runtime (a custom executor may record any JSON).
 */
export class TaskHandle<R = AgentResult> {
  /** `<queue>/<name>`: pass it to `client.handle()` from any process to re-attach. */
  readonly taskId: string;
  private readonly ctx: ClientContext;

  constructor(ctx: ClientContext, taskId: string) {
    this.ctx = ctx;
    this.taskId = taskId;
  }

  /** The queue the task was submitted to (the part of its id before the slash). */
  get queue(): string {
    return splitTaskId(this.taskId).queue;
  }

  /** The task's record now. Throws TaskNotFoundError if it does not exist (or expired). */
  async status(): Promise<TaskResult> {
    const record = await withRedis(this.ctx.redis, () => this.ctx.store.get(this.taskId));
    if (!record) throw new TaskNotFoundError(this.taskId);
    return record;
  }

  /**
   * Resolves with the task's result once it COMPLETED; throws TaskFailedError or TaskCancelledError
   * (carrying the task's error) when it ended otherwise. Woken by a notification, not polling.
   */
  async result(options: ResultOptions = {}): Promise<R> {
    const { timeoutMs, signal, onUnserved } = parseInput(ResultOptionsSchema, options, "result options");
    const ctx = this.ctx;
    const hub = await ctx.hub();
    const feed = await ctx.statusFeed();
    let wake: () => void = () => {};
    let ended: StatusEvent | undefined;
    const served = checkServed(ctx, this.taskId, onUnserved);
    const unwatch = await withRedis(ctx.redis, () =>
      feed.watch(this.taskId, (event) => {
        if (!event) return wake();
        if (showsServed(event)) served.progressed();
        if (isTerminalEvent(event)) {
          ended = event;
          wake();
        }
      }),
    ).catch((err: unknown) => {
      served.stop();
      throw err;
    });
    // After a reconnect the notification may have been missed: look again.
    const stopReconnect = hub.onReconnect(() => wake());
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<"timeout">((resolve) => {
      if (timeoutMs !== undefined) timer = setTimeout(() => resolve("timeout"), timeoutMs);
    });
    let onAbort: (() => void) | undefined;
    const aborted = new Promise<"aborted">((resolve) => {
      onAbort = () => resolve("aborted");
      if (signal?.aborted) onAbort();
      else signal?.addEventListener("abort", onAbort, { once: true });
    });
    try {
      for (;;) {
        // Armed before reading, so a notification between the read and the wait is not lost.
        const woken = new Promise<"woken">((resolve) => {
          wake = () => resolve("woken");
        });
        // The terminal event carries the outcome: no need to read the record again.
        if (ended) return settleEvent(this.taskId, ended) as R;
        let record: TaskResult;
        try {
          record = await this.status();
        } catch (err) {
          // Redis is restarting or the connection dropped: wait for the reconnect (or a moment), then look again.
          if (!(err instanceof ConnectionError)) throw err;
          const pause = new Promise<"woken">((resolve) => setTimeout(resolve, 250, "woken"));
          const why = await Promise.race([woken, pause, expired, aborted]);
          if (why === "timeout") throw new WaitTimeoutError(`task ${this.taskId} to finish`, timeoutMs!);
          if (why === "aborted") throw signal!.reason;
          continue;
        }
        if (isTerminal(record.status)) return settle(record) as R;
        // Woken by the notification, or after a while anyway: a message lost where no reconnect
        // told of it (a failover's catch-up read answered by a node that was behind) must not leave
        // the caller waiting for ever.
        let recheck: NodeJS.Timeout | undefined;
        const quiet = new Promise<"woken">((resolve) => {
          recheck = setTimeout(resolve, RECHECK_MS, "woken");
        });
        const why = await Promise.race([woken, quiet, expired, aborted]);
        clearTimeout(recheck);
        if (why === "timeout") throw new WaitTimeoutError(`task ${this.taskId} to finish`, timeoutMs!);
        if (why === "aborted") throw signal!.reason;
      }
    } finally {
      clearTimeout(timer);
      // A long-lived signal (an application's shutdown signal, say) must not collect a listener per call.
      if (onAbort) signal?.removeEventListener("abort", onAbort);
      served.stop();
      stopReconnect();
      unwatch();
    }
  }

  /**
   * The task's events in order: those already published, then live, with no gap and no duplicate,
   * ending after the terminal status event.
   */
  stream(options: StreamOptions = {}): AsyncGenerator<FlotillaEvent, void, undefined> {
    const { onUnserved, ...rest } = parseInput(StreamOptionsSchema, options, "stream options");
    const ctx = this.ctx;
    // Handed over as a promise so the reader's own generator is the only one per event.
    const source = (async () => ({ redis: ctx.redis, hub: await ctx.hub(), keys: ctx.keys, statusFeed: await ctx.statusFeed() }))();
    const events = streamEvents(source, this.taskId, rest);
    return onUnserved ? watchingServed(events, checkServed(ctx, this.taskId, onUnserved)) : events;
  }

  /**
   * Cancels the task: a waiting one ends CANCELLED at once and never runs; a running one is
   * aborted by its worker. On a finished task it changes nothing and says so (`finished`).
   */
  async cancel(reason?: string): Promise<CancelOutcome> {
    const outcome = await withRedis(this.ctx.redis, () => requestCancel(this.ctx.redis, this.ctx.keys, this.ctx.retention, this.taskId, reason));
    if (outcome.outcome === "missing") throw new TaskNotFoundError(this.taskId);
    return outcome;
  }

  /**
   * Runs a FAILED task again: its dead letter is re-queued (see `client.deadLetters.requeue`), the
   * task back to PENDING with its retries reset. A task with no dead letter left (it did not fail, or
   * its letter was trimmed or purged) is a DeadLetterNotFoundError; one that is not FAILED a ValidationError.
   */
  async retry(): Promise<TaskHandle<R>> {
    const { queue } = splitTaskId(this.taskId);
    const letter = await withRedis(this.ctx.redis, () => this.ctx.broker.findDeadLetter(queue, this.taskId));
    if (!letter) {
      const record = await this.status();
      if (record.status !== "FAILED") throw ValidationError.of("task", "taskId", `task ${this.taskId} is ${record.status}; only a FAILED task can be retried`);
      throw new DeadLetterNotFoundError(queue, `of task ${this.taskId}`);
    }
    const revived = await withRedis(this.ctx.redis, () => this.ctx.store.requeueDeadLetter({ ...letter, taskId: this.taskId }));
    if (revived.outcome === "gone") throw new DeadLetterNotFoundError(queue, letter.id);
    if (revived.outcome === "refused") {
      throw ValidationError.of("task", "taskId", `task ${this.taskId} is ${revived.status ?? "gone"}; only a FAILED task can be retried`);
    }
    return this;
  }

  /**
   * Sends signal `name` with `payload` (JSON) to the task, from any process: a task WAITING for it
   * (a tool's `waitForSignal(name)`, or a tool that needs approval) goes back to its queue and
   * resumes on any worker, from where it stopped. Taken once: a second send, or a signal it does not
   * wait for, throws NotWaitingError (code NOT_WAITING). TaskNotFoundError when there is no such task.
   */
  async signal(name: string, payload: JsonValue = null): Promise<void> {
    const signal = parseInput(SignalNameSchema, name, "signal name");
    checkJsonDepth(payload, DEFAULTS.maxJsonDepth, "signal payload");
    checkJson(payload, "signal payload", { root: "payload" });
    const json = JSON.stringify(parseInput(JsonValueSchema, payload, "signal payload"));
    if (Buffer.byteLength(json) > DEFAULTS.maxPayloadBytes) {
      throw ValidationError.of("signal payload", "payload", `is ${Buffer.byteLength(json)} bytes; at most ${DEFAULTS.maxPayloadBytes}`);
    }
    const reply = await withRedis(this.ctx.redis, () => this.ctx.store.signal(this.taskId, signal, json));
    if (reply.outcome === "missing") throw new TaskNotFoundError(this.taskId);
    if (reply.outcome === "not-waiting") throw new NotWaitingError(this.taskId, signal, reply.status, reply.waitingFor);
  }

  /**
   * Sends a message into the running agent, from any process: it waits in the task's own slot and
   * joins the conversation at the run's next turn boundary (after the current model call and its
   * tool calls), so the model's next turn sees it; the task's stream carries a `user-message` event
   * (`messageId`: the id returned) where it joined. One sent during the final turn gets another turn,
   * if the agent has one left. A PENDING or WAITING task (an approval, a signal) gets it when it runs
   * again. A task that has ended: NotRunningError (code NOT_RUNNING), nothing written;
   * TaskNotFoundError when there is no such task; a ValidationError for an empty message or one over
   * the payload limit. Agents run in this process's runtime only (Redis mode): a Temporal-mode run
   * does not take messages yet.
   */
  async send(message: string): Promise<{ messageId: string; waiting: number }> {
    if (typeof message !== "string" || message.length === 0) throw ValidationError.of("message", "message", "must be a non-empty string");
    const bytes = Buffer.byteLength(message);
    if (bytes > DEFAULTS.maxPayloadBytes) throw ValidationError.of("message", "message", `is ${bytes} bytes; at most ${DEFAULTS.maxPayloadBytes}`);
    const messageId = newId();
    const { redis, keys, retention } = this.ctx;
    const reply = await withRedis(redis, () =>
      sendMessage(redis, keys, this.taskId, { id: messageId, content: message, at: Date.now() }, retention.recordTtlMs),
    );
    if (reply.outcome === "missing") throw new TaskNotFoundError(this.taskId);
    if (reply.outcome === "finished") throw new NotRunningError(this.taskId, reply.status ?? "ended");
    return { messageId, waiting: reply.waiting };
  }

  /** Approves the tool call the task waits on (a tool with `approval`): it runs. `signal`: the tool's approval signal. */
  approve(reason?: string, signal = "approval"): Promise<void> {
    return this.signal(signal, { approved: true, ...(reason !== undefined && { reason }) });
  }

  /** Rejects the tool call the task waits on: it does not run, and the model is told `reason` and decides what to do. */
  reject(reason?: string, signal = "approval"): Promise<void> {
    return this.signal(signal, { approved: false, ...(reason !== undefined && { reason }) });
  }
}

/** A status event that shows a worker took the task (it ran, waits for a signal, or ended): pending and retrying show nothing. */
const showsServed = (event: FlotillaEvent): boolean => event.type !== "status" || (event.status !== "pending" && event.status !== "retrying");

/** The stream as it is, with the served check told of what it shows and stopped when the stream ends. */
async function* watchingServed(events: AsyncGenerator<FlotillaEvent, void, undefined>, served: ServedCheck): AsyncGenerator<FlotillaEvent, void, undefined> {
  try {
    for await (const event of events) {
      if (showsServed(event)) served.progressed();
      yield event;
    }
  } finally {
    served.stop();
  }
}

function settleEvent(taskId: string, event: StatusEvent): unknown {
  const error = event.error ?? { message: event.status, code: event.status.toUpperCase() };
  if (event.status === "failed") throw new TaskFailedError(taskId, error);
  if (event.status === "cancelled") throw new TaskCancelledError(taskId, error);
  return event.result ?? null;
}

function settle(record: TaskResult): unknown {
  const error = record.error ?? { message: record.status.toLowerCase(), code: record.status };
  if (record.status === "FAILED") throw new TaskFailedError(record.taskId, error);
  if (record.status === "CANCELLED") throw new TaskCancelledError(record.taskId, error);
  return record.result ?? null;
}
