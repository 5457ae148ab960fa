import type { Backoff, JsonValue, Priority, RunnableSpec, TokenUsage } from "@flotilla/core";
import type { AgentEvent } from "@flotilla/events";

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
}

/**
 * Runs a task's agent and returns its result (JSON). The Worker owns claiming, status, events and
 * cancel; an executor only runs. The default runs @flotilla/agent in process; others (Temporal)
 * plug in here.
 */
export interface Executor {
  execute(context: ExecutionContext): Promise<JsonValue>;
}
