import type { Lane } from "@flotilla/broker";
import type { CancelListener } from "@flotilla/cancel";
import {
  AbortReason,
  type Backoff,
  backoffDelay,
  checkJsonDepth,
  DEFAULTS,
  ErrorCodes,
  isRetryable,
  type JsonValue,
  JsonValueSchema,
  type Keys,
  type Logger,
  NodePayloadSchema,
  parseJsonOr,
  parseStored,
  type Resumption,
  type Retention,
  type RunnableSpec,
  RunnableSpecSchema,
  SignalDeliverySchema,
  type TaskError,
  type TaskPayload,
  TaskSuspended,
  type TokenUsage,
  toTaskError,
} from "@flotilla/core";
import { type AgentEvent, EventPublisher } from "@flotilla/events";
import { extractTrace, type FlotillaMetrics, METRICS, SpanKind, withSpan } from "@flotilla/metrics";
import { type FinishInput, type StartReply, takeMessages, verifyTaskSignature } from "@flotilla/store";
import { SpanStatusCode } from "@opentelemetry/api";
import type { Redis } from "ioredis";
import { z } from "zod";
import type { Executor, NodeExecutionContext, NodeExecutor } from "./executor.ts";

// What a task record holds was parsed with JSON.parse (so every value in it is JSON) and its depth
// checked: these schemas check its shape, not each JSON value again (that cost every task a walk
// of its input).
const MetadataSchema = z.record(z.string(), z.unknown());
const StoredAgentPayloadSchema = z
  .object({ agent: RunnableSpecSchema, input: z.custom<JsonValue>((v) => v !== undefined, { message: "Invalid input: expected a JSON value" }) })
  .strict();
const CarrierSchema = z.record(z.string(), z.string());

export type RunReply = Extract<StartReply, { kind: "run" }>;

/** A started task's payload as read: an agent's task, or a graph node's (`agent` is then the node type, which names it on events). */
type TaskToRun =
  | { agent: RunnableSpec; input: JsonValue; metadata: Record<string, JsonValue>; node?: undefined; resume: Resumption | undefined }
  | { agent: { name: string }; input: JsonValue; metadata: Record<string, JsonValue>; node: NodeExecutionContext["node"]; state: JsonValue | undefined };

/** What one attempt came to: the outcome to record (with its trace id), or nothing when it lost its claim. */
export type AttemptResult = { outcome: FinishInput; traceId: string | undefined } | undefined;

export interface AttemptDeps {
  redis: Redis;
  keys: Keys;
  /** The retention of a queue's tasks (the worker's, or the queue's own in `queueRetention`): how long their events live, how many are kept. */
  retentionOf: (queue: string) => Retention;
  executor: Executor;
  /** Runs graph node tasks, when the worker serves graph nodes. */
  graph?: NodeExecutor | undefined;
  /** When set, the only agents this worker runs, by name. */
  agents: ReadonlyMap<string, RunnableSpec> | undefined;
  cancels: CancelListener;
  metrics: FlotillaMetrics;
  /** The worker's backoff, for tasks without their own. */
  backoff: Backoff;
  /** What a shutdown past the drain deadline does to a run (read when it happens). */
  onDeadline: () => "release" | "cancel";
  /** An attempt started running. */
  started: (taskId: string, attempt: number) => void;
  /** The timeout of a task of `queue` that sets none (ms; undefined: no limit). */
  defaultTimeoutOf?: ((queue: string) => number | undefined) | undefined;
  /** Deepest nesting accepted in a task's agent, input and metadata as read. @default DEFAULTS.maxJsonDepth */
  maxJsonDepth?: number | undefined;
  /** Largest task read (payload and metadata, bytes): a bigger one is not parsed. @default DEFAULTS.workerMaxPayloadBytes */
  maxPayloadBytes?: number | undefined;
  /** When set, only tasks signed with one of these run; others fail BAD_SIGNATURE. */
  signingSecrets?: readonly string[] | undefined;
  /** Where what an attempt notices goes (a task's inbox holding something other than messages). @default none */
  log?: Logger | undefined;
}

/**
 * Runs one attempt of a started task: reads its payload and metadata, picks the agent, runs it
 * through the executor under the task's timeout, cancel and lease (an abort decides the outcome by
 * its reason), in a span that continues the submit's trace, and decides how it ends — completed,
 * failed, retrying with backoff, cancelled, or handed back at shutdown.
 */
export class AttemptRunner {
  private readonly deps: AttemptDeps;

  constructor(deps: AttemptDeps) {
    this.deps = deps;
  }

  /**
   * `finished` is told when the run's own code is over (the executor returned or threw, or its
   * abort was heeded) and only its events and outcome are left to write: from then on the worker
   * keeps its lease but does not fence it (see Running.finished).
   */
  async run(lane: Lane, start: RunReply, controller: AbortController, finished: () => void = () => {}): Promise<AttemptResult> {
    const { taskId, attempt } = start;
    // A cancel that reached this worker before the start reply did is remembered by the listener.
    const unwatch = this.deps.cancels.watch(taskId, (reason) => controller.abort(new AbortReason(ErrorCodes.CANCELLED, reason)));
    try {
      this.deps.started(taskId, attempt);
      const parsed = this.read(start);
      if ("error" in parsed) return { outcome: { attempt, status: "FAILED", agent: parsed.agent, error: parsed.error }, traceId: undefined };
      return await this.execute(lane, start, parsed, controller, finished);
    } finally {
      unwatch();
    }
  }

  /** The payload, metadata and agent of a started task, or why it cannot run (never retried: the same input fails again). */
  private read(start: RunReply): TaskToRun | { agent: string; error: TaskError } {
    const { taskId } = start;
    let payload: TaskPayload;
    let metadata: Record<string, JsonValue>;
    let resume: Resumption | undefined;
    // Before parsing: a record written straight into Redis may be any size.
    const maxBytes = this.deps.maxPayloadBytes ?? DEFAULTS.workerMaxPayloadBytes;
    const bytes = Buffer.byteLength(start.payload) + Buffer.byteLength(start.metadata) + Buffer.byteLength(start.resume ?? "");
    if (bytes > maxBytes) {
      return {
        agent: start.agent,
        error: { code: ErrorCodes.PAYLOAD_TOO_LARGE, message: `the task is ${bytes} bytes (payload and metadata); this worker reads at most ${maxBytes}` },
      };
    }
    const secrets = this.deps.signingSecrets;
    // Before anything of it is parsed: an unsigned or changed task is not read at all.
    if (secrets && !verifyTaskSignature(secrets, start.signature, taskId, start.payload, start.metadata)) {
      const why = start.signature ? "its signature does not match it (changed since it was signed, or signed with another secret)" : "it is not signed";
      return { agent: start.agent, error: { code: ErrorCodes.BAD_SIGNATURE, message: `task ${taskId} was refused: ${why}` } };
    }
    try {
      const rawPayload = JSON.parse(start.payload) as { agent?: unknown; input?: unknown; node?: unknown; state?: unknown } | null;
      const rawMetadata = parseJsonOr(start.metadata, null);
      // Before any recursive check: a record written straight into Redis may nest thousands of
      // levels, where zod (and JSON.stringify) would throw a bare RangeError.
      const maxDepth = this.deps.maxJsonDepth ?? DEFAULTS.maxJsonDepth;
      if (typeof rawPayload === "object" && rawPayload !== null) {
        checkJsonDepth(rawPayload.agent, maxDepth, "agent");
        checkJsonDepth(rawPayload.input, maxDepth, "input");
        checkJsonDepth(rawPayload.node, maxDepth, "node");
        checkJsonDepth(rawPayload.state, maxDepth, "state");
      }
      checkJsonDepth(rawMetadata, maxDepth, "metadata");
      // A node's payload names its node; any other is an agent's (so a bad one is told by the field at fault).
      const isNode = typeof rawPayload === "object" && rawPayload !== null && "node" in rawPayload;
      payload = isNode
        ? parseStored(NodePayloadSchema, rawPayload, `payload of task ${taskId}`)
        : (parseStored(StoredAgentPayloadSchema, rawPayload, `payload of task ${taskId}`) as TaskPayload);
      metadata = start.metadata === "{}" ? {} : (parseStored(MetadataSchema, rawMetadata, `metadata of task ${taskId}`) as Record<string, JsonValue>);
      if (start.resume !== undefined) {
        const raw: unknown = JSON.parse(start.resume);
        // The saved conversation nests the model's tool arguments a few levels below the task's input.
        checkJsonDepth(raw, maxDepth + 8, "resume");
        const state = parseStored(JsonValueSchema, raw, `saved state of task ${taskId}`);
        const signal = start.signal === undefined ? undefined : parseStored(SignalDeliverySchema, JSON.parse(start.signal), `signal of task ${taskId}`);
        resume = { state, ...(signal && { signal }) };
      }
    } catch (err) {
      return { agent: start.agent, error: { code: ErrorCodes.INVALID_PAYLOAD, message: toTaskError(err).message } };
    }
    if ("node" in payload) {
      const type = payload.node.type;
      if (!this.deps.graph?.nodeTypes.includes(type)) {
        return { agent: type, error: { code: ErrorCodes.UNKNOWN_NODE_TYPE, message: `this worker does not serve node type "${type}"` } };
      }
      return { agent: { name: type }, input: payload.input, metadata, node: payload.node, state: payload.state };
    }
    const name = payload.agent.name;
    const agent = this.deps.agents ? this.deps.agents.get(name) : payload.agent;
    if (!agent) return { agent: name, error: { code: ErrorCodes.UNKNOWN_AGENT, message: `this worker does not run agent "${name}"` } };
    return { agent, input: payload.input, metadata, resume };
  }

  private async execute(lane: Lane, start: RunReply, task: TaskToRun, controller: AbortController, finished: () => void): Promise<AttemptResult> {
    const { taskId, attempt } = start;
    const { metrics } = this.deps;
    const agentName = task.agent.name;
    const publisher = new EventPublisher(this.deps.redis, this.deps.keys, this.deps.retentionOf(lane.queue), {
      taskId,
      attempt,
      agent: agentName,
      detailed: start.detailed,
      onStale: () => controller.abort(new AbortReason(ErrorCodes.STALE_ATTEMPT, "the task is no longer ours")),
      messagesWaiting: start.messagesWaiting,
      onPublished: (types, ms) => {
        for (const [type, n] of Object.entries(types)) metrics.add(METRICS.eventsEmitted, n, { type });
        metrics.record(METRICS.publishDuration, ms / 1000);
      },
    });
    const timeoutMs = start.timeoutMs ?? this.deps.defaultTimeoutOf?.(lane.queue);
    const timer =
      timeoutMs === undefined
        ? undefined
        : setTimeout(() => controller.abort(new AbortReason(ErrorCodes.TIMEOUT, `timed out after ${timeoutMs} ms`)), timeoutMs);
    const aborted = new Promise<never>((_, reject) => {
      const onAbort = () => reject(controller.signal.reason);
      if (controller.signal.aborted) onAbort();
      else controller.signal.addEventListener("abort", onAbort, { once: true });
    });
    aborted.catch(() => {});

    let usage: TokenUsage | undefined;
    /** Takes of the task's inbox so far (their ids: `<attempt>:<n>`). */
    let takes = 0;
    const attrs = { queue: lane.queue, agent: agentName };
    if (attempt === 1) metrics.record(METRICS.waitTime, start.waitedMs / 1000, attrs);
    const runStarted = performance.now();
    let traceId: string | undefined;
    // The worker's span continues the submit's trace (carried by the task) and is the parent of the
    // run's model-turn and tool spans.
    const spanAttributes = { "flotilla.task_id": taskId, "flotilla.queue": lane.queue, "flotilla.agent": agentName, "flotilla.attempt": attempt };
    const parent = extractTrace(parseCarrier(start.trace));
    const outcome = await withSpan("flotilla.execute", { kind: SpanKind.CONSUMER, parent, attributes: spanAttributes }, async (span) => {
      const id = span.spanContext().traceId;
      if (!/^0*$/.test(id)) traceId = id;
      let outcome: FinishInput;
      try {
        const common = {
          taskId,
          attempt,
          queue: lane.queue,
          priority: lane.priority,
          metadata: task.metadata,
          maxRetries: start.maxRetries,
          backoff: start.backoff ?? this.deps.backoff,
          signal: controller.signal,
          emit: (event: AgentEvent) => publisher.emit(event),
          reportUsage: (u: TokenUsage) => {
            usage = u;
          },
          takeMessages: async () => {
            // The turn's events go first: their reply carries the newest count of messages waiting.
            await publisher.flush();
            if (publisher.messagesWaiting === 0) return [];
            const taken = await takeMessages(this.deps.redis, this.deps.keys, taskId, attempt, `${attempt}:${++takes}`);
            publisher.messagesTaken();
            // No longer this attempt's (its publisher hears so too, and the run is stopped).
            if (taken === undefined) return [];
            if (taken.malformed > 0) this.deps.log?.warn("dropped inbox entries that were not messages", { taskId, malformed: taken.malformed });
            return taken.messages.map(({ id, content }) => ({ id, content }));
          },
        };
        const { executor, graph } = this.deps;
        // A plain-JavaScript executor may return a plain value rather than a promise.
        const execution = Promise.resolve(
          task.node === undefined
            ? executor.execute({ ...common, agent: task.agent, input: task.input, ...(task.resume && { resume: task.resume }) })
            : graph!.execute({
                ...common,
                node: task.node,
                input: task.input,
                state: task.state,
                runAgent: async (agent, input) => (await executor.execute({ ...common, agent, input })) ?? null,
              }),
        );
        execution.catch(() => {}); // it may settle after an abort we already acted on
        // An executor that ignores its signal must not hold the task's outcome hostage.
        const result = await Promise.race([execution, aborted]);
        // The work is done: a Redis slow to take its events and outcome must not make it be thrown
        // away (self-fenced) and run again elsewhere.
        if (!lostClaim(controller.signal)) finished();
        await publisher.flush();
        outcome = { attempt, status: "COMPLETED", agent: agentName, result: result ?? null };
      } catch (err) {
        outcome = this.failure(start, agentName, controller.signal, err);
        if (lostClaim(controller.signal)) {
          // Self-fenced: the next holder speaks for the task; nothing of this attempt is written, and
          // nothing waits on a Redis this worker cannot reach.
          if (!publisher.isStale) publisher.abandon();
        } else {
          finished();
          if (outcome.status !== "CANCELLED" && outcome.status !== "WAITING" && !publisher.isStale) {
            publisher.emit({ type: "error", message: outcome.error!.message, code: outcome.error!.code });
          }
          await publisher.flush().catch(() => {});
        }
      } finally {
        if (timer) clearTimeout(timer);
      }
      if (outcome.status !== "COMPLETED" && outcome.status !== "WAITING") {
        span.setStatus({ code: SpanStatusCode.ERROR, message: outcome.error?.message ?? outcome.status });
        span.recordException({ name: outcome.error?.code ?? outcome.status, message: outcome.error?.message ?? outcome.status });
      }
      return outcome;
    });
    metrics.record(METRICS.duration, (performance.now() - runStarted) / 1000, { ...attrs, status: outcome.status });
    // Lost its claim (another worker runs the task now), or stopped itself before another may: the
    // next holder owns the outcome.
    if (lostClaim(controller.signal)) return undefined;
    return { outcome: usage ? { ...outcome, usage } : outcome, traceId };
  }

  /**
   * How a failed or aborted attempt ends: the abort's reason decides (cancel, shutdown, timeout,
   * lost lease), else the error; a retryable failure with retries left becomes RETRYING with backoff.
   */
  private failure(start: RunReply, agent: string, signal: AbortSignal, err: unknown): FinishInput {
    const { attempt } = start;
    const reason = signal.aborted ? signal.reason : err;
    if (reason instanceof TaskSuspended) {
      // It waits for a signal: no worker held meanwhile; the entry comes back at the wait's timeout.
      const { timeoutMs } = reason.request;
      return {
        attempt,
        status: "WAITING",
        agent,
        waiting: reason.request,
        resume: reason.state,
        ...(timeoutMs !== undefined && { retryAt: Date.now() + timeoutMs }),
      };
    }
    const error = toTaskError(reason);
    if (reason instanceof AbortReason && reason.code === ErrorCodes.SHUTDOWN && this.deps.onDeadline() === "release") {
      return { attempt, status: "RETRYING", agent, error, retryAt: Date.now(), release: true };
    }
    if (reason instanceof AbortReason && (reason.code === ErrorCodes.CANCELLED || reason.code === ErrorCodes.SHUTDOWN)) {
      return { attempt, status: "CANCELLED", agent, error };
    }
    if (start.retries < start.maxRetries && isRetryable(reason)) {
      const delay = backoffDelay(start.backoff ?? this.deps.backoff, start.retries);
      return { attempt, status: "RETRYING", agent, error, retryAt: Date.now() + delay };
    }
    return { attempt, status: "FAILED", agent, error };
  }
}

/** The run was aborted because the task is no longer (or may soon no longer be) this worker's. */
function lostClaim(signal: AbortSignal): boolean {
  const reason: unknown = signal.reason;
  return reason instanceof AbortReason && (reason.code === ErrorCodes.STALE_ATTEMPT || reason.code === ErrorCodes.LEASE_EXPIRED);
}

/** A task's trace carrier as stored (JSON), or undefined when it has none or it is unreadable. */
function parseCarrier(text: string | undefined): Record<string, string> | undefined {
  if (text === undefined) return undefined;
  const parsed = CarrierSchema.safeParse(parseJsonOr(text, undefined));
  return parsed.success ? parsed.data : undefined;
}
