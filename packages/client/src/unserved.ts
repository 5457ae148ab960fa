import { splitTaskId } from "@flotilla/core";
import { withRedis } from "@flotilla/core/redis";
import { getFleetStatus } from "@flotilla/health";
import type { ClientContext } from "./context.ts";

/**
 * How long a followed task may wait for a worker before the fleet is asked whether any serves its
 * queue: a worker takes a task within milliseconds when one is there, and a busy fleet still serves
 * it (no notice), so this only has to outlast a worker's own start.
 */
export const UNSERVED_AFTER_MS = 2000;

/** What `onUnserved` is told: the followed task waits, and no live worker serves its queue. */
export interface UnservedNotice {
  taskId: string;
  queue: string;
  /** Its status when the fleet was asked: PENDING (never started) or RETRYING (waiting for its next attempt). */
  status: "PENDING" | "RETRYING";
  /** Live workers in the fleet, none of which serves the queue (0: no worker is alive at all). */
  liveWorkers: number;
  /** When the fleet was asked (ms, Redis's clock). */
  at: number;
}

export type OnUnserved = (notice: UnservedNotice) => void;

/** A follow's one check: `progressed()` when the task showed it is served, `stop()` when the follow ends. */
export interface ServedCheck {
  progressed(): void;
  stop(): void;
}

const NONE: ServedCheck = { progressed() {}, stop() {} };

/**
 * Once, `afterMs` after a follow began and only if nothing showed the task served meanwhile (a
 * status event other than pending or retrying): reads the task and, while it still waits, the
 * fleet's heartbeats; tells `onUnserved` when no live worker (draining ones left out) lists the
 * task's queue. Nothing is read when no one listens, when the task is served within the grace, or
 * when the follow ends first: the normal path costs no command. A failed read is not retried (the
 * follow itself carries on either way).
 */
export function checkServed(ctx: ClientContext, taskId: string, onUnserved: OnUnserved | undefined, afterMs = UNSERVED_AFTER_MS): ServedCheck {
  if (!onUnserved) return NONE;
  let armed = true;
  const timer = setTimeout(() => {
    void ask().catch(() => {});
  }, afterMs);
  timer.unref();
  const ask = async (): Promise<void> => {
    const record = await withRedis(ctx.redis, () => ctx.store.get(taskId));
    if (!armed || !record || (record.status !== "PENDING" && record.status !== "RETRYING")) return;
    const fleet = await withRedis(ctx.redis, () => getFleetStatus(ctx.redis, ctx.keys));
    const { queue } = splitTaskId(taskId);
    const serving = fleet.workers.some((w) => w.alive && w.state !== "draining" && (w.queues ?? []).includes(queue));
    if (!armed || serving) return;
    armed = false;
    onUnserved({ taskId, queue, status: record.status, liveWorkers: fleet.live, at: fleet.at });
  };
  return {
    progressed() {
      armed = false;
      clearTimeout(timer);
    },
    stop() {
      armed = false;
      clearTimeout(timer);
    },
  };
}
