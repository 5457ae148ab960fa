import type { Backoff, JsonValue, Keys, Logger, Priority, Resumption, RunnableSpec, TaskError, TokenUsage } from "@flotilla/core";
import type { AgentEvent } from "@flotilla/events";
import type { FlotillaMetrics } from "@flotilla/metrics";
import type { Redis } from "ioredis";

/** Everything an executor needs to run one attempt of a task. */
export interface ExecutionContext {
  taskId: string;
  attempt: number;
  queue: string;
  priority: Priority;
  /** The agent or swarm to run. */
  agent: RunnableSpec;
  input: JsonValue;
  metadata: Record<string, JsonValue>;
  /**
   * The task's retry policy: the retries it allows after a failed attempt, and the wait before
   * each (its own backoff, else the worker's). The worker applies them to the attempts it runs; an
   * executor that retries steps itself (Temporal mode) reads them here.
   */
  maxRetries: number;
  backoff: Backoff;
  /** Aborted on cancel, timeout, shutdown, or when the attempt lost its claim; `reason` (an AbortReason) says which. */
  signal: AbortSignal;
  /** Publishes an event (batched per tick, in order). */
  emit(event: AgentEvent): void;
  /** Records the run's token totals on the task (the last report wins). */
  reportUsage(usage: TokenUsage): void;
  /**
   * Messages sent to the task (`handle.send`) since the last call, oldest first: for a turn boundary.
   * Publishes the events emitted so far first (their reply says whether any wait), and costs a Redis
   * command only when some do. @default none (a context made by hand): nothing is ever sent
   */
  takeMessages?(): Promise<Array<{ id: string; content: string }>>;
  /**
   * Set when the task stopped to wait for a signal and this attempt carries it on: the state the run
   * saved (what its executor threw in a TaskSuspended) and the signal that came (none: the wait timed out).
   */
  resume?: Resumption | undefined;
}

/**
 * Runs a task's agent and returns its result (JSON). The Worker owns claiming, status, events and
 * cancel; an executor only runs. To wait for a signal without holding the worker, it throws a
 * TaskSuspended: the task becomes WAITING, and the attempt that resumes it gets `resume`. The default runs @flotilla/agent in process; others (Temporal)
 * plug in here.
 */
export interface Executor {
  execute(context: ExecutionContext): Promise<JsonValue>;
}

/** Everything a node executor needs to run one attempt of a graph node's task. */
export interface NodeExecutionContext extends Omit<ExecutionContext, "agent" | "input"> {
  /** The node part of the task's payload, as stored (the graph package checks it). */
  node: { run: string; id: string; type: string; [field: string]: unknown };
  /** The node's resolved inputs. */
  input: JsonValue;
  /** The run state this node sees (a snapshot taken when it was created). */
  state: JsonValue | undefined;
  /** Runs an agent or swarm through the worker's executor (in process, or Temporal mode), with this attempt's signal and events. */
  runAgent(agent: RunnableSpec, input: JsonValue): Promise<JsonValue>;
}

/** What a node executor is given when the worker starts. */
export interface NodeExecutorStart {
  redis: Redis;
  keys: Keys;
  logger: Logger;
  /** The worker's metrics: graph run and node durations are recorded there. */
  metrics: FlotillaMetrics;
  /** The secret the tasks it creates are signed with (the worker's first `signingSecrets`), if any. */
  signingSecret?: string | undefined;
}

/**
 * Runs graph node tasks beside a worker's agent tasks (@flotilla/graph's `graphWorker()` is one):
 * the worker serves its queues, lists its node types in its heartbeat, hands it each node task to
 * run, and tells it each node task that ended here, so the node's run advances.
 */
export interface NodeExecutor {
  /** The node types served (shown in the worker's heartbeat and the fleet status). */
  readonly nodeTypes: readonly string[];
  /** The queues those node types' tasks arrive on; the worker claims from them beside its own. */
  readonly queues: readonly string[];
  execute(context: NodeExecutionContext): Promise<JsonValue>;
  /**
   * A node task run here ended: its terminal outcome is recorded (`status`, and the error of one that
   * did not complete; a completed one's result is what `execute` returned).
   */
  ended(taskId: string, end: { status: "COMPLETED" | "FAILED" | "CANCELLED"; error?: TaskError | undefined }): void;
  /** Called once the worker is connected, before it claims. */
  start(deps: NodeExecutorStart): Promise<void>;
  /** Called as the worker closes, after its tasks drained and before its connections close. */
  stop(): Promise<void>;
}
