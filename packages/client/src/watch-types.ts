import { type Keys, QueueNameSchema, type TaskError, type TaskStatus } from "@flotilla/core";
import type { SubscriberHub } from "@flotilla/core/redis";
import type { GraphClient, RunStatus } from "@flotilla/graph";
import type { NotReady, WorkerState } from "@flotilla/health";
import type { TaskResult } from "@flotilla/store";
import type { Redis } from "ioredis";
import { z } from "zod";

/** One thing that happened in the fleet, as `client.watch()` reports it. `at` is ms since the epoch. */
export type WatchEvent =
  | { type: "task.submitted"; queue: string; taskId: string; at: number }
  | { type: "task.started"; queue: string; taskId: string; attempt: number; workerId?: string; at: number }
  | { type: "task.finished"; queue: string; taskId: string; status: "COMPLETED" | "FAILED" | "CANCELLED"; attempt: number; error?: TaskError; at: number }
  /** Any other status change: RETRYING (waits for its next attempt), WAITING (for a signal), PENDING (a signal resumed it). */
  | { type: "task.status"; queue: string; taskId: string; status: TaskStatus; attempt: number; at: number }
  | { type: "worker.joined"; workerId: string; hostname?: string; queues: string[]; state?: WorkerState; at: number }
  /** `stopped`: it left the fleet on purpose; `dead`: it stopped beating. */
  | { type: "worker.left"; workerId: string; reason: "stopped" | "dead"; at: number }
  | { type: "worker.state"; workerId: string; state: WorkerState; reasons: NotReady[]; at: number }
  | { type: "run.started"; runId: string; graph: string; at: number }
  | { type: "run.finished"; runId: string; graph: string; status: Exclude<RunStatus, "RUNNING">; at: number }
  /** The reader fell behind by more than `maxBuffered` events: this many of the oldest were dropped. */
  | { type: "watch.lagged"; dropped: number; at: number };

export const WatchOptionsSchema = z
  .object({
    /**
     * Only this queue: its tasks, and the workers that serve it; runs are left out.
     * @default every queue (those that appear later too), every worker, every graph run
     */
    queue: QueueNameSchema.optional(),
    /** How often submissions, workers and runs are read (task status changes arrive as they happen). @default 1000 */
    pollMs: z.number().int().min(50).max(60_000).default(1000),
    /** Events held for a reader that does not keep up, before the oldest are dropped. @default 10_000 */
    maxBuffered: z.number().int().min(1).default(10_000),
  })
  .strict();
export type WatchOptions = z.input<typeof WatchOptionsSchema> & {
  /** Told about a round that failed (Redis out of reach, say); the next round tries again. @default none */
  onError?: (err: unknown) => void;
};

/** What a watch needs of its client. */
export interface WatchSources {
  redis: Redis;
  keys: Keys;
  hub(): Promise<SubscriberHub>;
  graphs: GraphClient;
  /** Task records, for the status of tasks that moved before their queue's channel was subscribed. */
  records(taskIds: readonly string[]): Promise<Array<TaskResult | undefined>>;
}

/** A watch event about one task. */
export type TaskWatchEvent = Extract<WatchEvent, { taskId: string }>;
