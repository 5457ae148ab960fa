import { type Keys, type Retention, splitTaskId, type TaskStatus } from "@flotilla/core";
import type { Redis } from "ioredis";
import { scripts } from "./scripts.ts";

export interface CancelOutcome {
  /**
   * - `cancelled`: it was waiting and is now CANCELLED; it will never run.
   * - `requested`: it is running; its worker aborts it and records CANCELLED.
   * - `finished`: it had already ended (`status` says how); nothing changed.
   * - `missing`: no such task.
   */
  outcome: "cancelled" | "requested" | "finished" | "missing";
  status: TaskStatus | undefined;
}

/** Stores a cancel request on the task and announces it to the fleet. */
export async function requestCancel(
  redis: Redis,
  keys: Keys,
  retention: Retention,
  taskId: string,
  reason = "cancelled by request",
  /** A fixed time (tests); @default Redis's clock */
  now?: number,
): Promise<CancelOutcome> {
  const { queue } = splitTaskId(taskId);
  const reply = (await scripts.cancel.run(
    redis,
    [keys.task(taskId), keys.stats(queue, now ?? Date.now())],
    [reason, now ?? "", retention.keepCompleted.ageMs, keys.cancelChannel(queue), keys.statusChannel(queue)],
  )) as [CancelOutcome["outcome"], string];
  return { outcome: reply[0], status: (reply[1] || undefined) as TaskStatus | undefined };
}
