// Builds the heartbeat fence of one running activity from its Temporal context.

import type { Context } from "@temporalio/activity";
import { type Client, isGrpcServiceError } from "@temporalio/client";
import { fenceTiming, HeartbeatFence } from "./heartbeat-fence.ts";

/** gRPC's NOT_FOUND: the server knows no such running activity attempt. */
const NOT_FOUND = 5;
const isNotFound = (err: unknown): boolean => isGrpcServiceError(err) && err.code === NOT_FOUND;

/** The counter of activities stopped by their fence, in the Temporal runtime's metrics. */
export const SELF_FENCED_METRIC = "flotilla_activities_self_fenced";

export interface FenceActivityOptions {
  taskId: string;
  /** How often to heartbeat. */
  intervalMs: number;
  /** @default a tenth of the activity's heartbeat timeout */
  marginMs?: number | undefined;
  /** Aborted (LEASE_EXPIRED) once Temporal may have given up on the activity. */
  abort: AbortController;
  /** Told when Temporal answers a beat with NOT_FOUND: it no longer holds the activity. */
  gone: () => void;
}

/**
 * Starts the fence of the activity running in `ctx`, stopped by the caller when the activity ends;
 * none for an activity without a heartbeat timeout (Temporal never retries it for silence) or run
 * without a client to the server (a `MockActivityEnvironment`).
 */
export function fenceActivity(ctx: Context, options: FenceActivityOptions): HeartbeatFence | undefined {
  const { heartbeatTimeoutMs, taskToken, activityNamespace } = ctx.info;
  if (!heartbeatTimeoutMs) return undefined;
  let client: Client;
  try {
    client = ctx.client;
  } catch {
    return undefined;
  }
  const fence = new HeartbeatFence({
    ...fenceTiming(heartbeatTimeoutMs, options.intervalMs, options.marginMs),
    timeoutMs: heartbeatTimeoutMs,
    beat: async () => {
      try {
        await client.workflowService.recordActivityTaskHeartbeat({ namespace: activityNamespace, taskToken, identity: client.options.identity });
        return true;
      } catch (err) {
        if (isNotFound(err)) return false;
        throw err;
      }
    },
    gone: options.gone,
    lapsed: (reason, beatMsAgo) => {
      ctx.log.warn("heartbeat not acknowledged in time (Temporal unreachable?): stopping the activity before Temporal may retry it elsewhere", {
        taskId: options.taskId,
        activityType: ctx.info.activityType,
        beatMsAgo,
        heartbeatTimeoutMs,
      });
      ctx.metricMeter
        .createCounter(SELF_FENCED_METRIC, "{activity}", "Activities stopped because Temporal had not acknowledged their heartbeats in time")
        .add(1);
      options.abort.abort(reason);
    },
  });
  fence.start();
  return fence;
}
