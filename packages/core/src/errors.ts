/** Stable error codes: safe to match on, never renamed. */
export const ErrorCodes = {
  VALIDATION: "VALIDATION_ERROR",
  DUPLICATE_TASK: "DUPLICATE_TASK",
  TASK_NOT_FOUND: "TASK_NOT_FOUND",
  /** A dead letter that does not exist (never written, re-queued already, or trimmed). */
  DEAD_LETTER_NOT_FOUND: "DEAD_LETTER_NOT_FOUND",
  TASK_FAILED: "TASK_FAILED",
  TASK_CANCELLED: "TASK_CANCELLED",
  WAIT_TIMEOUT: "WAIT_TIMEOUT",
  REDIS_UNAVAILABLE: "REDIS_UNAVAILABLE",
  CORRUPT_RECORD: "CORRUPT_RECORD",
  INVALID_PAYLOAD: "INVALID_PAYLOAD",
  UNKNOWN_TOOL: "UNKNOWN_TOOL",
  /** An agent or tool draws from a rate limit the worker does not configure. */
  UNKNOWN_RATE_LIMIT: "UNKNOWN_RATE_LIMIT",
  UNKNOWN_PROVIDER: "UNKNOWN_PROVIDER",
  UNKNOWN_AGENT: "UNKNOWN_AGENT",
  AGENT_ERROR: "AGENT_ERROR",
  TOOL_ERROR: "TOOL_ERROR",
  /** A tool returned a value JSON cannot hold (a cycle, a throwing toJSON, too deep): the model gets an error result. */
  TOOL_RESULT_INVALID: "TOOL_RESULT_INVALID",
  TIMEOUT: "TIMEOUT",
  CANCELLED: "CANCELLED",
  SHUTDOWN: "SHUTDOWN",
  STALE_ATTEMPT: "STALE_ATTEMPT",
  /**
   * A run its worker stopped itself: its lease could not be renewed in time (Redis unreachable), so
   * another worker may take the task over. Nothing is recorded for the attempt; the next holder runs it.
   */
  LEASE_EXPIRED: "LEASE_EXPIRED",
  DELIVERY_LIMIT: "DELIVERY_LIMIT",
  UNRECOVERABLE: "UNRECOVERABLE",
  /** A task names a memory store its worker does not have. */
  UNKNOWN_MEMORY: "UNKNOWN_MEMORY",
  /** The model's final answer did not match the agent's output schema. */
  OUTPUT_INVALID: "OUTPUT_INVALID",
  /** The model provider's API refused or failed the call (retryable or not, as the provider says). */
  MODEL_ERROR: "MODEL_ERROR",
  /** An alert sink could not deliver an alert (a webhook that kept refusing it). */
  ALERT_DELIVERY: "ALERT_DELIVERY",
  /** A worker (or another long-lived object) was started twice. */
  ALREADY_STARTED: "ALREADY_STARTED",
  /** The client (or another long-lived object) was used after `close()`. */
  CLOSED: "CLOSED",
  /** The Temporal server could not be reached (Temporal mode). */
  TEMPORAL_UNAVAILABLE: "TEMPORAL_UNAVAILABLE",
  /** A feature needs a newer Node.js than the one running (the message names the version). */
  UNSUPPORTED_NODE: "UNSUPPORTED_NODE",
  /**
   * Redis is at its `maxmemory` and refused to grow (its OOM reply): nothing was written. A
   * capacity problem of Redis, not of the task: try again once memory frees.
   */
  REDIS_FULL: "REDIS_FULL",
  /** A task a worker read is bigger than its `maxPayloadBytes`: never parsed, never run. */
  PAYLOAD_TOO_LARGE: "PAYLOAD_TOO_LARGE",
  /** A graph node returned an output bigger than its worker's `maxOutputBytes`. */
  OUTPUT_TOO_LARGE: "OUTPUT_TOO_LARGE",
  /** A graph node task names a node type its worker does not serve. */
  UNKNOWN_NODE_TYPE: "UNKNOWN_NODE_TYPE",
  /** A graph that cannot run as written (an unknown node, an expression naming a node that is not an ancestor, a loop with no maxIterations…). */
  INVALID_GRAPH: "INVALID_GRAPH",
  /** A fan-out node returned more items than the run allows (maxFanOut), or no list. */
  FANOUT_INVALID: "FANOUT_INVALID",
  /** A node's route (its output's `next`, or its router's answer) names a node that is not among its `next`. */
  INVALID_ROUTE: "INVALID_ROUTE",
  /** A graph template name (or name@version) that is not stored. */
  TEMPLATE_NOT_FOUND: "TEMPLATE_NOT_FOUND",
  /** A graph run that does not exist (never started, or expired). */
  RUN_NOT_FOUND: "RUN_NOT_FOUND",
  /** A graph run failed: a node failed with no `all-done` join to absorb it. */
  RUN_FAILED: "RUN_FAILED",
  /** A graph run was cancelled. */
  RUN_CANCELLED: "RUN_CANCELLED",
  /** A bus event that cannot be read (not the fields or JSON the bus writes): dead-lettered at once. */
  MALFORMED_EVENT: "MALFORMED_EVENT",
  /** A bus event's payload is bigger than the bus allows (`maxPayloadBytes`). */
  EVENT_TOO_LARGE: "EVENT_TOO_LARGE",
  /** A bus event's delivery failed as often as its subscription allows (`maxRetries`): dead-lettered. */
  RETRIES_EXHAUSTED: "RETRIES_EXHAUSTED",
  /** A webhook answered with an error status or could not be reached. */
  WEBHOOK_FAILED: "WEBHOOK_FAILED",
  /** A bus subscription that does not exist on the topic. */
  SUBSCRIPTION_NOT_FOUND: "SUBSCRIPTION_NOT_FOUND",
  /** A task waited for a signal (an approval) longer than its `timeoutMs`, and its wait says `onTimeout: "fail"`. */
  SIGNAL_TIMEOUT: "SIGNAL_TIMEOUT",
  /**
   * A durable submit (the client's `durableSubmit`) that fewer replicas acknowledged in time than it
   * asks for: the task was written to the master, and a failover right now could lose it.
   */
  NOT_REPLICATED: "NOT_REPLICATED",
  /** A worker that verifies signatures read a task with none, or one that does not match it (written by someone without the secret, or changed since). */
  BAD_SIGNATURE: "BAD_SIGNATURE",
  /** A signal sent to a task that is not WAITING for a signal of that name (it never asked, was already resumed, or ended). */
  NOT_WAITING: "NOT_WAITING",
  /** A message sent to a task that has finished (COMPLETED, FAILED or CANCELLED): nobody will read it. */
  NOT_RUNNING: "NOT_RUNNING",
} as const;

export type ErrorCode = (typeof ErrorCodes)[keyof typeof ErrorCodes];

/** What a task's record keeps of the error that ended it. */
export interface TaskError {
  message: string;
  code: string;
}

export interface FlotillaErrorOptions {
  /** The error this one wraps (kept as the standard `cause`). */
  cause?: unknown;
  details?: Record<string, unknown> | undefined;
  /**
   * `false`: retrying cannot help, the task fails at once whatever retries it has left. Unset: the
   * code decides (see NON_RETRYABLE_CODES).
   */
  retryable?: boolean | undefined;
}

/** Root of every error Flotilla throws; `code` is stable, `message` is for people. */
export class FlotillaError extends Error {
  readonly code: string;
  readonly details: Record<string, unknown> | undefined;
  readonly retryable: boolean | undefined;

  constructor(code: string, message: string, options: FlotillaErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.details = options.details;
    this.retryable = options.retryable;
  }

  toTaskError(): TaskError {
    return { message: this.message, code: this.code };
  }
}

export interface ValidationIssue {
  path: string;
  message: string;
}

/** Input rejected at a boundary; `field` names the first offending field. */
export class ValidationError extends FlotillaError {
  readonly field: string;
  readonly issues: ValidationIssue[];

  constructor(what: string, issues: ValidationIssue[], options: { details?: Record<string, unknown> } = {}) {
    const first = issues[0] ?? { path: "", message: "invalid" };
    const field = first.path || what;
    super(ErrorCodes.VALIDATION, `invalid ${what}: ${field}: ${first.message}`, { details: { issues, ...options.details } });
    this.field = field;
    this.issues = issues;
  }

  /** One bad field: `ValidationError.of("worker options", "concurrency", "must be a positive integer")`. */
  static of(what: string, field: string, message: string): ValidationError {
    return new ValidationError(what, [{ path: field, message }]);
  }
}

/** A long-lived object used out of order: started twice (ALREADY_STARTED) or used after close (CLOSED). */
export class LifecycleError extends FlotillaError {
  constructor(code: typeof ErrorCodes.ALREADY_STARTED | typeof ErrorCodes.CLOSED, message: string) {
    super(code, message, { retryable: false });
  }
}

export class DuplicateTaskError extends FlotillaError {
  readonly taskId: string;
  constructor(taskId: string, options: { details?: Record<string, unknown> } = {}) {
    super(ErrorCodes.DUPLICATE_TASK, `a task with id "${taskId}" already exists`, { details: options.details });
    this.taskId = taskId;
  }
}

export class TaskNotFoundError extends FlotillaError {
  readonly taskId: string;
  constructor(taskId: string) {
    super(ErrorCodes.TASK_NOT_FOUND, `no task with id "${taskId}" (never submitted, or expired)`);
    this.taskId = taskId;
  }
}

/** A durable submit that fewer replicas acknowledged in time than asked: the tasks exist on the master, and may not survive a failover. */
export class NotReplicatedError extends FlotillaError {
  readonly taskIds: readonly string[];
  readonly replicas: number;
  constructor(taskIds: readonly string[], replicas: number, wanted: number, timeoutMs: number) {
    super(
      ErrorCodes.NOT_REPLICATED,
      `${taskIds.length === 1 ? `task ${taskIds[0]} is` : `${taskIds.length} tasks are`} on ${replicas} of the ${wanted} replicas asked for after ${timeoutMs} ms: a failover now could lose ${taskIds.length === 1 ? "it" : "them"}`,
      { details: { taskIds, replicas, wanted } },
    );
    this.taskIds = taskIds;
    this.replicas = replicas;
  }
}

/** A signal sent to a task that does not wait for it; `waitingFor` is the signal it waits for, if any. */
export class NotWaitingError extends FlotillaError {
  readonly taskId: string;
  readonly status: string | undefined;
  readonly waitingFor: string | undefined;
  constructor(taskId: string, signal: string, status: string | undefined, waitingFor: string | undefined) {
    const why = waitingFor ? `it waits for signal "${waitingFor}"` : `it is ${status ?? "not waiting"}, not WAITING`;
    super(ErrorCodes.NOT_WAITING, `task ${taskId} does not wait for signal "${signal}": ${why}`, { details: { status, waitingFor } });
    this.taskId = taskId;
    this.status = status;
    this.waitingFor = waitingFor;
  }
}

/** A message sent to a task that has ended: `status` is how it ended. */
export class NotRunningError extends FlotillaError {
  readonly taskId: string;
  readonly status: string;
  constructor(taskId: string, status: string) {
    super(ErrorCodes.NOT_RUNNING, `task ${taskId} has ended (${status}): a message sent to it would never be read`, { details: { status } });
    this.taskId = taskId;
    this.status = status;
  }
}

export class DeadLetterNotFoundError extends FlotillaError {
  readonly queue: string;
  readonly deadLetterId: string;
  constructor(queue: string, deadLetterId: string) {
    super(ErrorCodes.DEAD_LETTER_NOT_FOUND, `no dead letter ${deadLetterId} in queue "${queue}"`);
    this.queue = queue;
    this.deadLetterId = deadLetterId;
  }
}

/** What `result()` throws for a task that ended without a result; `taskError` is what was recorded. */
abstract class TaskEndedError extends FlotillaError {
  readonly taskId: string;
  readonly taskError: TaskError;
  constructor(code: string, taskId: string, taskError: TaskError, message: string) {
    super(code, message, { details: { taskError } });
    this.taskId = taskId;
    this.taskError = taskError;
  }
}

/** Thrown by `result()` when the task ended FAILED. */
export class TaskFailedError extends TaskEndedError {
  constructor(taskId: string, taskError: TaskError) {
    super(ErrorCodes.TASK_FAILED, taskId, taskError, `task ${taskId} failed: [${taskError.code}] ${taskError.message}`);
  }
}

/** Thrown by `result()` when the task was CANCELLED. */
export class TaskCancelledError extends TaskEndedError {
  constructor(taskId: string, taskError: TaskError) {
    super(ErrorCodes.TASK_CANCELLED, taskId, taskError, `task ${taskId} was cancelled: ${taskError.message}`);
  }
}

export class WaitTimeoutError extends FlotillaError {
  constructor(what: string, timeoutMs: number) {
    super(ErrorCodes.WAIT_TIMEOUT, `gave up waiting for ${what} after ${timeoutMs} ms`);
  }
}

/** Redis could not be reached (or dropped) and the command could not be completed. */
export class ConnectionError extends FlotillaError {
  constructor(message: string, cause?: unknown) {
    super(ErrorCodes.REDIS_UNAVAILABLE, message, { cause });
  }
}

/** Redis's reply to a write it refuses at `maxmemory` (noeviction): "OOM command not allowed when used memory > 'maxmemory'". */
const OOM_REPLY = /^OOM /;

/** Whether `err` is Redis refusing a write because it is full (its OOM reply, or a RedisFullError made of one). */
export function isRedisFull(err: unknown): boolean {
  if (err instanceof FlotillaError) return err.code === ErrorCodes.REDIS_FULL;
  return err instanceof Error && OOM_REPLY.test(err.message);
}

/** Redis is at its `maxmemory` and refused the write (nothing was written): try again once memory frees. */
export class RedisFullError extends FlotillaError {
  constructor(what: string, cause?: unknown) {
    super(ErrorCodes.REDIS_FULL, `Redis is full (maxmemory reached): ${what} was refused, nothing written; try again once memory frees`, { cause });
  }
}

/** Data read back from Redis did not match its schema. */
export class CorruptRecordError extends FlotillaError {
  constructor(what: string, reason: string) {
    super(ErrorCodes.CORRUPT_RECORD, `corrupt ${what}: ${reason}`);
  }
}

/** Normalises anything thrown into the `{ message, code }` a task record keeps. */
export function toTaskError(err: unknown, fallbackCode: string = ErrorCodes.AGENT_ERROR): TaskError {
  if (err instanceof FlotillaError) return err.toTaskError();
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    return { message: err.message || err.name, code: typeof code === "string" && code ? code : fallbackCode };
  }
  return { message: typeof err === "string" ? err : (JSON.stringify(err) ?? String(err)), code: fallbackCode };
}

/**
 * Throw from a tool, a model or an executor to fail the task at once (FAILED, with this code:
 * UNRECOVERABLE unless given another), without the retries it has left. From a tool it is the only
 * error that ends the task: a tool's other errors, whatever their `retryable`, go back to the model
 * as error results. Elsewhere any error with `retryable: false` fails the task at once too.
 * `@flotilla/agent` and `@flotilla/worker` re-export this class.
 */
export class UnrecoverableError extends FlotillaError {
  constructor(message: string, code: string = ErrorCodes.UNRECOVERABLE, options: { cause?: unknown } = {}) {
    super(code, message, { cause: options.cause, retryable: false });
  }
}

/**
 * Codes of errors that the same input would raise again, so retrying cannot help: the one list
 * the worker, the Temporal workflow's retry policy and the docs use.
 */
export const NON_RETRYABLE_CODES: readonly string[] = [
  ErrorCodes.VALIDATION,
  ErrorCodes.UNKNOWN_TOOL,
  ErrorCodes.UNKNOWN_RATE_LIMIT,
  ErrorCodes.UNKNOWN_PROVIDER,
  ErrorCodes.UNKNOWN_AGENT,
  ErrorCodes.INVALID_PAYLOAD,
  ErrorCodes.UNRECOVERABLE,
  ErrorCodes.OUTPUT_INVALID,
  ErrorCodes.SIGNAL_TIMEOUT,
  ErrorCodes.BAD_SIGNATURE,
  ErrorCodes.UNKNOWN_MEMORY,
  ErrorCodes.CANCELLED,
  ErrorCodes.UNKNOWN_NODE_TYPE,
  ErrorCodes.PAYLOAD_TOO_LARGE,
  ErrorCodes.OUTPUT_TOO_LARGE,
  ErrorCodes.FANOUT_INVALID,
  ErrorCodes.INVALID_ROUTE,
  ErrorCodes.MALFORMED_EVENT,
  ErrorCodes.EVENT_TOO_LARGE,
];
const NON_RETRYABLE: ReadonlySet<string> = new Set(NON_RETRYABLE_CODES);

/**
 * Why a run was aborted, as its signal's reason (what a tool's `signal.reason` is): code CANCELLED
 * (message: the cancel's reason), TIMEOUT, SHUTDOWN or STALE_ATTEMPT. The worker decides the outcome
 * by it. Executors throw it too: a graph node whose run already ended throws code CANCELLED, so its
 * task ends CANCELLED before its own cancel arrives. Executors running tools elsewhere (Temporal
 * mode) abort them with the same reason.
 */
export class AbortReason extends FlotillaError {}

/** Whether a failed attempt may be retried: not for `retryable: false` (UnrecoverableError), nor a code in NON_RETRYABLE_CODES. */
export function isRetryable(err: unknown): boolean {
  if (err && typeof err === "object" && (err as { retryable?: unknown }).retryable === false) return false;
  return !NON_RETRYABLE.has(toTaskError(err).code);
}
