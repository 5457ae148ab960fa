import { type ExponentialBackoff, exponentialDelay } from "@flotilla/core";
import { asCluster, type OwnedRedis } from "@flotilla/core/redis";

/**
 * How a worker's connections try Redis again after losing it: 100 ms, then every 250 ms. A worker's
 * runs stop themselves once their leases could not be renewed for most of the lease (self-fencing),
 * so every second spent waiting to reconnect after Redis is back is taken from the outage a run
 * rides out; a try is one TCP connect, cheap for Redis even from a large fleet.
 */
export const WORKER_RECONNECT: ExponentialBackoff = { baseMs: 50, maxMs: 250 };

/**
 * Makes a connection the worker opened try Redis again at most WORKER_RECONNECT.maxMs apart, so the
 * worker is back within about that long of Redis answering again (the connections' shared default
 * backs off to seconds). A connection lent to the worker, or one whose options set their own
 * `retryStrategy`, is left as it is. ioredis reads the strategy at each drop, so setting it on the
 * open connection is enough; a cluster's is the one it follows when it has lost every node.
 */
export function reconnectPromptly(conn: OwnedRedis, given: unknown): void {
  if (!conn.owned || ownStrategy(given)) return;
  const retry = (times: number) => exponentialDelay(WORKER_RECONNECT, times);
  const cluster = asCluster(conn.redis);
  if (cluster) {
    cluster.options.clusterRetryStrategy = retry;
    return;
  }
  if (conn.redis.options) conn.redis.options.retryStrategy = retry;
}

/** Whether the worker's `redis` option sets a reconnect strategy of its own (ioredis options, or a cluster's). */
function ownStrategy(given: unknown): boolean {
  if (typeof given !== "object" || given === null) return false;
  const o = given as { retryStrategy?: unknown; options?: { clusterRetryStrategy?: unknown } };
  return typeof o.retryStrategy === "function" || typeof o.options?.clusterRetryStrategy === "function";
}
