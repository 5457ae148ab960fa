// @flotilla/store/testing: what tests and tools need beyond the production API — starting and
// finishing one task without a queue entry, a task to create, and the scripts' sources.
import { type Priority, splitTaskId, type TaskError, type TaskStatus } from "@flotilla/core";
import type { FinishInput, FinishOutcome, RunnableTask } from "./replies.ts";
import { type NewTask, TaskStore } from "./task-store.ts";

/**
 * A task to create, for tests: `taskId` is `<queue>/<name>`; agent "a", payload "{}", created now,
 * not detailed, no retries, no metadata unless `over` says otherwise.
 */
export function newTask(taskId: string, over: Partial<NewTask> = {}): NewTask {
  return {
    taskId,
    queue: splitTaskId(taskId).queue,
    agent: "a",
    payload: "{}",
    detailed: false,
    maxRetries: 0,
    metadata: {},
    ...over,
  };
}

export type StartOutcome =
  | ({ kind: "run" } & RunnableTask)
  | { kind: "skip"; reason: "missing" | "terminal" | "running" | "cancelled" | "parked"; status: TaskStatus | undefined }
  | { kind: "dead"; attempts: number; lastError: TaskError | undefined }
  | { kind: "corrupt"; reason: string };

/** A TaskStore with the test-only calls. */
export class TestTaskStore extends TaskStore {
  /**
   * Moves a task to RUNNING with a new attempt number, or says why it must not run. `reclaimed`: the
   * entry came back after its lease lapsed, so a RUNNING task is taken over.
   */
  async start(
    taskId: string,
    workerId: string,
    options: { reclaimed?: boolean; now?: number; entryId?: string; priority?: Priority } = {},
  ): Promise<StartOutcome> {
    const { queue, name } = splitTaskId(taskId);
    const [reply] = await this.startEntries(
      queue,
      workerId,
      [{ priority: options.priority ?? "normal", entryId: options.entryId ?? "", name }],
      options.reclaimed ?? false,
      options.now,
    );
    switch (reply?.kind) {
      case "run": {
        const { kind, priority, entryId, taskId: _, ...run } = reply;
        return { kind, ...run };
      }
      case "skip":
        return { kind: "skip", reason: reply.reason, status: reply.status };
      case "dead":
        return { kind: "dead", attempts: reply.attempts, lastError: reply.lastError };
      case "corrupt":
        return { kind: "corrupt", reason: reply.reason };
      default:
        return { kind: "skip", reason: "missing", status: undefined };
    }
  }

  /**
   * Writes a task record field by field, as a buggy or hostile producer might, with no queue entry
   * and no checks: for tests of what workers do with records they cannot trust. PENDING with a few
   * plausible fields unless `fields` says otherwise. Returns the task's name in its queue.
   */
  async writeRaw(taskId: string, fields: Record<string, string | number> = {}): Promise<string> {
    const { queue, name } = splitTaskId(taskId);
    await this.redis.hset(this.keys.task(taskId), {
      taskId,
      queue,
      agent: "fine",
      payload: "{}",
      createdAt: Date.now(),
      status: "PENDING",
      maxRetries: 0,
      maxDeliveries: 3,
      ...fields,
    });
    return name;
  }

  /** Records the end of an attempt with no entry to settle; rejected when the task is already terminal or the attempt is stale. */
  async finish(taskId: string, input: FinishInput, now = Date.now()): Promise<FinishOutcome> {
    const { outcomes } = await this.settle(splitTaskId(taskId).queue, "", [{ ...input, taskId, priority: "normal", entryId: "" }], { now });
    return outcomes[0]!;
  }
}

export { scripts } from "./scripts.ts";
