import type { Keys, Logger } from "@flotilla/core";
import type { RedisConnection } from "@flotilla/core/redis";
import type { FlotillaMetrics } from "@flotilla/metrics";
import type { Redis } from "ioredis";

/** What a subscription runner is given when the worker starts. */
export interface SubscriptionRunnerStart {
  redis: Redis;
  keys: Keys;
  logger: Logger;
  metrics: FlotillaMetrics;
  /** The worker's id: its consumer name in every subscription's group. */
  workerId: string;
  /** Opens a connection for one loop's blocking reads (the runner closes it). */
  blocking: () => Redis;
  /** The worker's `redis` option, for clients the runner opens itself. */
  connection: RedisConnection | undefined;
  /** The secret the tasks it creates are signed with (the worker's first `signingSecrets`), if any. */
  signingSecret?: string | undefined;
}

/**
 * Serves event-bus subscriptions beside a worker's tasks (@flotilla/bus's `busWorker()` is one):
 * the worker starts it once connected, lists its subscriptions in its heartbeat, and stops it as
 * it drains.
 */
export interface SubscriptionRunner {
  /** The subscriptions served, as `<topic>/<name>` (shown in the heartbeat and the fleet status). */
  readonly subscriptions: readonly string[];
  start(deps: SubscriptionRunnerStart): Promise<void>;
  /** Stops reading, lets events being handled finish for up to `drainMs`, hands back the rest. */
  stop(drainMs: number): Promise<void>;
}
