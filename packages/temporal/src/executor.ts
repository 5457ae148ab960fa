import {
  ErrorCodes,
  type ExponentialBackoff,
  exponentialDelay,
  FlotillaError,
  type JsonValue,
  type Logger,
  parseInput,
  type Resumption,
  silentLogger,
  sleep,
  TaskSuspended,
  type TokenUsage,
  type WaitRequest,
} from "@flotilla/core";
import { MemoryRefSchema } from "@flotilla/memory";
import type { ExecutionContext, Executor } from "@flotilla/worker";
import {
  Client,
  Connection,
  isGrpcServiceError,
  isRetryableError,
  ServiceError,
  WorkflowExecutionAlreadyStartedError,
  WorkflowFailedError,
  type WorkflowHandle,
  WorkflowNotFoundError,
} from "@temporalio/client";
import { ApplicationFailure, CancelledFailure, TimeoutFailure } from "@temporalio/common";
import { FailureDetailsSchema } from "./failure-details.ts";
import { type ActivitySettings, NEXT_WAIT, type RunResultJson, SIGNAL, type SignalMessage } from "./types.ts";
import type { flotillaAgent } from "./workflow.ts";

export interface TemporalExecutorOptions {
  /** A Temporal client, or where to connect one. */
  client?: Client;
  /** @default "127.0.0.1:7233" */
  address?: string;
  /** @default "default" */
  namespace?: string;
  /** The task queue the Temporal workers (createTemporalWorker) poll. @default "flotilla" */
  taskQueue?: string;
  /** Timeouts and attempts of the workflow's activities. */
  activity?: ActivitySettings;
  /** Where a workflow that could not be cancelled is reported. @default silentLogger */
  logger?: Logger;
}

/** Attempts at cancelling a workflow when the failure is transient (Temporal unreachable for a moment). */
const CANCEL_ATTEMPTS = 3;
/** Pause before cancel attempt 2, 3, …: 250 ms, doubling. */
const CANCEL_BACKOFF: ExponentialBackoff = { baseMs: 250 };

/** Codes that reach the Flotilla worker as they are: Temporal already retried, so none is retried again. */
function toFlotillaError(err: unknown, signal: AbortSignal): unknown {
  if (signal.aborted) return signal.reason;
  let cause: unknown = err;
  while (cause instanceof Error) {
    if (cause instanceof ApplicationFailure) return new FlotillaError(cause.type ?? ErrorCodes.AGENT_ERROR, cause.message, { cause: err, retryable: false });
    if (cause instanceof CancelledFailure) return new FlotillaError(ErrorCodes.CANCELLED, "the workflow was cancelled", { cause: err, retryable: false });
    if (cause instanceof TimeoutFailure)
      return new FlotillaError(ErrorCodes.TIMEOUT, `the workflow timed out: ${cause.message}`, { cause: err, retryable: false });
    cause = cause.cause;
  }
  return err instanceof WorkflowFailedError ? new FlotillaError(ErrorCodes.AGENT_ERROR, err.message, { cause: err, retryable: false }) : err;
}

/** The run's usage a failure carries (the `finish` activity's, in its details), if any. */
function failureUsage(err: unknown): TokenUsage | undefined {
  for (let cause: unknown = err; cause instanceof Error; cause = cause.cause) {
    if (cause instanceof ApplicationFailure) {
      const parsed = FailureDetailsSchema.safeParse(cause.details?.[0]);
      return parsed.success ? parsed.data.usage : undefined;
    }
  }
  return undefined;
}

/** What a Temporal-mode task keeps while it waits: the signal its workflow waits for, and the attempt that saw it wait. */
interface WaitState {
  signal: string;
  attempt: number;
}

/** The workflow signal that carries on a resumed task: the Flotilla signal that came, or that its wait timed out. */
function signalMessage(resume: Resumption): SignalMessage {
  const state = resume.state as Partial<WaitState> | null;
  if (resume.signal) return { id: `${resume.signal.name}@${resume.signal.at}`, name: resume.signal.name, payload: resume.signal.payload };
  if (typeof state?.signal !== "string") throw new FlotillaError(ErrorCodes.CORRUPT_RECORD, "corrupt saved state: no signal named", { retryable: false });
  return { id: `${state.signal}@timeout:${state.attempt}`, name: state.signal, timedOut: true };
}

/** A failure of a call to Temporal that may pass if made again: the server unreachable or overloaded. */
const isTransient = (err: unknown): boolean => err instanceof ServiceError && isGrpcServiceError(err.cause) && isRetryableError(err.cause);

/** Cancels a workflow, again after a transient failure; what still fails is logged, not thrown (the task ends anyway). */
async function cancelWorkflow(handle: WorkflowHandle, logger: Logger): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await handle.cancel();
      return;
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) {
        // Already closed (it finished meanwhile): nothing left to cancel.
        logger.debug("the workflow to cancel has already closed", { taskId: handle.workflowId });
        return;
      }
      if (attempt >= CANCEL_ATTEMPTS || !isTransient(err)) {
        logger.warn("could not cancel the workflow: it may run on", { taskId: handle.workflowId, attempts: attempt, err });
        return;
      }
      await sleep(exponentialDelay(CANCEL_BACKOFF, attempt - 1));
    }
  }
}

/**
 * Runs each task as a Temporal workflow (workflow id = task id) instead of in process. A
 * redelivered queue entry attaches to the workflow already running — or already finished — instead
 * of starting a second one. Temporal owns retries and recovery; the task's record, events and
 * handle look exactly as in Redis mode. A cancel reaches the workflow (and its running activity);
 * a worker shutting down or losing its lease only lets go of the workflow, which another worker
 * attaches to.
 */
export function temporalExecutor(options: TemporalExecutorOptions = {}): Executor & { close(): Promise<void> } {
  const taskQueue = options.taskQueue ?? "flotilla";
  const logger = options.logger ?? silentLogger;
  let owned: Connection | undefined;
  let clientPromise: Promise<Client> | undefined;
  const client = () => {
    clientPromise ??= options.client
      ? Promise.resolve(options.client)
      : Connection.connect({ address: options.address ?? "127.0.0.1:7233" }).then((connection) => {
          owned = connection;
          return new Client({ connection, namespace: options.namespace ?? "default" });
        });
    return clientPromise;
  };
  return {
    async execute(ctx: ExecutionContext): Promise<JsonValue> {
      const temporal = await client();
      const memory = ctx.metadata.memory === undefined ? undefined : parseInput(MemoryRefSchema, ctx.metadata.memory, "metadata.memory");
      let handle: WorkflowHandle<typeof flotillaAgent>;
      try {
        handle = await temporal.workflow.start<typeof flotillaAgent>("flotillaAgent", {
          taskQueue,
          workflowId: ctx.taskId,
          args: [
            {
              taskId: ctx.taskId,
              agent: ctx.agent,
              input: ctx.input,
              ...(memory && { memory }),
              ...(options.activity && { activity: options.activity }),
              retry: { maxRetries: ctx.maxRetries, backoff: ctx.backoff },
            },
          ],
          // Running: attach to it. Finished: never start it again (REJECT_DUPLICATE), read its outcome.
          workflowIdConflictPolicy: "USE_EXISTING",
          workflowIdReusePolicy: "REJECT_DUPLICATE",
        });
      } catch (err) {
        if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
        handle = temporal.workflow.getHandle<typeof flotillaAgent>(ctx.taskId);
      }
      const onAbort = () => {
        const code = (ctx.signal.reason as { code?: string } | undefined)?.code;
        // Shutdown and a lost lease leave the workflow running for the next worker.
        if (code === ErrorCodes.CANCELLED || code === ErrorCodes.TIMEOUT) void cancelWorkflow(handle, logger);
      };
      if (ctx.signal.aborted) onAbort();
      else ctx.signal.addEventListener("abort", onAbort, { once: true });
      // Let go of the long polls (the result, the next wait) when the attempt ends either way.
      const polls = new AbortController();
      try {
        if (ctx.resume) await handle.signal(SIGNAL, signalMessage(ctx.resume));
        // The workflow answers NEXT_WAIT once a tool call waits for a signal: then the task waits in
        // Flotilla (WAITING, no worker held) and the signal that resumes it is forwarded here.
        const waiting = temporal.withAbortSignal(polls.signal, () => handle.executeUpdate<WaitRequest, []>(NEXT_WAIT));
        const finished = temporal.withAbortSignal(polls.signal, () => handle.result());
        const outcome = await Promise.race([
          finished.then((result) => ({ result: result as RunResultJson })),
          // A run that ends without waiting fails the update: the result decides then.
          waiting.then(
            (request) => ({ request }),
            () => finished.then((result) => ({ result: result as RunResultJson })),
          ),
        ]);
        if ("request" in outcome) {
          finished.catch(() => {});
          const state: WaitState = { signal: outcome.request.name, attempt: ctx.attempt };
          throw new TaskSuspended(outcome.request, state as unknown as JsonValue);
        }
        waiting.catch(() => {});
        ctx.reportUsage(outcome.result.usage as TokenUsage);
        return outcome.result as JsonValue;
      } catch (err) {
        if (err instanceof TaskSuspended) throw err;
        // A run that failed after its usage was counted (its answer missed the output schema) records it, as in Redis mode.
        const usage = failureUsage(err);
        if (usage) ctx.reportUsage(usage);
        throw toFlotillaError(err, ctx.signal);
      } finally {
        polls.abort();
        ctx.signal.removeEventListener("abort", onAbort);
      }
    },
    async close() {
      await owned?.close();
    },
  };
}
